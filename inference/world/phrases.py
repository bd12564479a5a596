"""A text's short phrases matched to the world model's concept names (`WorldModel.name_vecs`).

The text heads read a whole text; the phrases say what it names plainly. Each phrase (2 to 4
words, and single words where they speak for a kind) is embedded with MiniLM and compared by
cosine to every name of every biome, atmosphere, time of day, creature and thing the weights
carry. `read_phrases` gathers, per kind and per class, how plainly some phrase names it;
`phrase_choice` and `named_choice` weigh a head's choice with that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from inference.world import spec
from inference.world import text as text_encoder
from inference.world.model import NAME_KINDS, WorldModel
from inference.world.places import BIOME_CLAIM_MIN, SECOND_PHRASE_MIN, BiomePhrases


@dataclass
class PhraseReading:
    """A prompt's phrases matched to concept names (`read_phrases`)."""

    biome: BiomePhrases | None
    weather: np.ndarray | None  # per atmosphere: cosine of the nearest phrase naming it (0: none)
    time: np.ndarray | None  # per time of day, the same
    # per atmosphere / time of day: whether the prompt mentions it (SUPPORT_MIN, CLAIM_MIN)
    weather_ok: np.ndarray | None = None
    time_ok: np.ndarray | None = None
    # per creature: cosine of the nearest phrase whose nearest name of all is one of its names
    # (0: no phrase names it; None: weights without creature names)
    creature: np.ndarray | None = None
    # per thing: cosine of the nearest phrase to one of its names (None: weights without them)
    thing: np.ndarray | None = None
    # what the text names plainest of what the model does not have (index in vocabulary.UNKNOWN)
    lacks: int | None = None
    # the phrases (then single words) read; per kind, per class, which of them names it
    # (weather, time: the nearest naming it; thing: the nearest to one of its names; -1: none);
    # and which names what the model lacks
    texts: list[str] = field(default_factory=list)
    at: dict[str, np.ndarray] = field(default_factory=dict)
    lacks_at: int | None = None


# A phrase names an atmosphere or a time of day when one of its names is its nearest of all
# names and at least this close; it weighs by how far past the bar it is, up to the plain bar,
# so a faint match never outvotes heads sure of the default ("a dry desert ... under a blazing
# noon sun" stays clear), while heads sure of clear no longer outvote "with cinders in the air"
# (0.79, ash). Two plainly named atmospheres are both at the cap: the heads choose between them.
PHRASE_NAME_MIN = 0.7
PHRASE_NAME_WEIGHT = 120.0  # nats per unit of cosine past PHRASE_NAME_MIN
PHRASE_NAME_PLAIN = 0.8

# Single words count as phrases for the time of day alone: "at daybreak" is nearer a dusk name,
# "daybreak" a dawn one; for atmospheres and places words mislead ("vine-choked" is nearest a
# sandstorm name).
WORDS_FOR = {"weather": False, "time": True}

# A text gets an atmosphere or a time of day other than the default (clear, day; for events,
# no change) only when one of its phrases comes within SUPPORT_MIN of one of that concept's
# names and one has one of them for its nearest name of all at CLAIM_MIN: the heads are sure of
# things nobody wrote on text unlike their training prompts ("an erupting volcano with rivers of
# lava": rain 1.00). Above 0.65 falling petals are lost.
SUPPORT_MIN = 0.6
CLAIM_MIN = 0.55

# A creature the heads read is kept only where a phrase of the text has one of its names for its
# nearest name of all, this close: the heads read some creature into texts that name none or one
# the model does not have ("an elephant appears": a crab).
NAMED_MIN = 0.5
# A creature a phrase names this plainly is taken where the heads read none or another: they
# never met "moose", "owl" or "tabby" (`vocabulary`), the names have. At 0.65 "the little" of a
# description was a "little fish".
NAMED_PLAIN = 0.7
# A thing the event head reads is kept only where some phrase comes this close to one of its
# names, whatever that phrase's nearest name ("a dirt track opens up" is nearest a desert); the
# creatures' stricter rule lost held-out thing phrasings. Past 0.45 "a dirt track opens up"
# (0.45 from "pave a trail") is lost.
THING_SUPPORT_MIN = 0.4

# A phrase whose nearest name of all is an atmosphere, a time of day or a creature names no biome,
# however near it comes to one: "in swirling sand" (a sandstorm) was the desert's and ruled out
# the jungle of "vine-choked tropics".
NOT_A_PLACE = [NAME_KINDS.index(k) for k in ("weather", "time", "creature")]
# A biome that this many phrases name by both readings (nearest name at AGREED_CLAIM_MIN, and the
# prompt heads on the phrase alone at AGREED_HEAD_MIN) is the second biome, whatever the heads make
# of the whole text: held-out names are far from every name ("vine-choked tropics" 0.44-0.47 from
# the jungle's) but the heads know them. A phrase sharing a place word (one that alone names a
# biome) with a phrase nearer to another biome does not count: "a cavern of" is a cave, "cavern of
# blue ice" an ice cave. At 0.4 "a faraway stretch of coastline" was a canyon as well.
AGREED_PHRASES = 3
AGREED_CLAIM_MIN = 0.42
AGREED_HEAD_MIN = 0.8


FUNCTION_WORDS = frozenset(
    """a an the some any of by in on at to with and or its it his her their my your our up down
    into onto across through over under from for as is are was be this that there here me you
    we they i where when which who whom whose what how might may can could would will shall
    should must""".split()
)


def read_phrases(
    model: WorldModel, text: str, places: bool = True, device: torch.device | str = "cpu"
) -> PhraseReading:
    """What the prompt's short phrases name, by cosine to the weights' concept names
    (nothing, for weights without names); `places`: read the biomes too (an event never
    changes them, and their reading runs the prompt heads on every phrase: ~11 ms)."""
    kinds = model.name_kinds.cpu().numpy()
    ids = model.name_ids.cpu().numpy()
    if not len(ids):
        return PhraseReading(biome=None, weather=None, time=None)
    # Single words speak for the time of day alone ("at daybreak" is nearer dusk than dawn,
    # "daybreak" is dawn at 0.80); for places and atmospheres they mislead (see WORDS_FOR).
    # a phrase of function words alone means nothing ("across the" was 0.45 from "coast",
    # "where you" 0.51 from "city")
    every = text_encoder.phrases(text)
    phrases = [p for p in every if not FUNCTION_WORDS.issuperset(p.split())] or every
    words = [w for w in text_encoder.phrases(text, sizes=(1,)) if w not in phrases]
    name_vecs = model.name_vecs.cpu().numpy()
    vecs = text_encoder.embed(phrases + words)
    all_sims = vecs @ name_vecs.T  # (phrases + words, names)
    is_word = np.arange(len(all_sims)) >= len(phrases)
    sims = all_sims[~is_word]  # (phrases, names)
    # biomes: per biome, the nearest phrase to one of its names, the same over only the
    # phrases nearest to that biome of all biomes, and how far such a phrase (at
    # SECOND_PHRASE_MIN) is nearer to it than to the runner-up biome, and which biomes both
    # readings of a phrase agree on (`_agreed_biomes`); a phrase whose nearest name of all is
    # an atmosphere, a time or a creature names no place (`NOT_A_PLACE`), nor does one inside
    # a creature's phrase ("an arctic" of "an arctic fox" is 0.75 from the snow's names)
    all_near, all_best = all_sims.argmax(1), all_sims.max(1)
    biome = None
    is_biome = kinds == NAME_KINDS.index("biome")
    if places and is_biome.any():
        per = np.full((len(sims), len(spec.BIOMES)), -1.0)
        for b in np.unique(ids[is_biome]):
            per[:, b] = sims[:, is_biome & (ids == b)].max(1)
        near_kind = kinds[all_near[~is_word]]
        per[np.isin(near_kind, NOT_A_PLACE)] = -1.0
        per[_leans_on_a_creature(phrases, near_kind == NAME_KINDS.index("creature"))] = -1.0
        nearest_biome = per.argmax(1)
        runner_up, top = np.sort(per, 1)[:, -2:].T  # per phrase
        claimer = _claiming_phrases(nearest_biome, top)
        claimed = np.where(claimer >= 0, top[claimer], -1.0)
        lead = np.full(len(spec.BIOMES), -1.0)
        close = top >= SECOND_PHRASE_MIN
        np.maximum.at(lead, nearest_biome[close], (top - runner_up)[close])
        word_is_place = is_biome[all_near[is_word]] & (all_best[is_word] >= BIOME_CLAIM_MIN)
        place_words = {w for w, place in zip(words, word_is_place, strict=True) if place}
        agreed = agreed_biomes(
            model, vecs[: len(phrases)], per, near_kind, phrases, place_words, device
        )
        biome = BiomePhrases(per.max(0), claimed, lead, agreed, _named_apart(phrases, claimer))
    # atmospheres and times: a phrase names the concept of its nearest name of all kinds
    # ("a snowy valley" is nearer a snowfield than falling snow: a biome, not weather)
    things = [NAME_KINDS.index(k) for k in ("other", "creature", "thing")]
    all_part = _part_of_a_thing(phrases + words, np.isin(kinds[all_near], things), all_best)
    in_place = _in_place_words(phrases + words, words, kinds[all_near[is_word]])
    parts = {"weather": all_part | in_place, "time": all_part}
    scores, ok, at = {}, {}, {}
    index = np.arange(len(all_sims))
    for kind, n in (("weather", len(spec.WEATHERS)), ("time", len(spec.TIMES))):
        rows = slice(None) if WORDS_FOR[kind] else ~is_word
        near, best, part = all_near[rows], all_best[rows], parts[kind][rows]
        of_kind = kinds == NAME_KINDS.index(kind)
        mine = of_kind[near] & ~part  # phrases whose nearest name is one of this kind's
        hit = mine & (best >= PHRASE_NAME_MIN)
        scores[kind] = np.zeros(n)
        np.maximum.at(scores[kind], ids[near[hit]], best[hit])
        at[kind] = _naming_phrase(index[rows][hit], ids[near[hit]], best[hit], n)
        # mentioned at all: a phrase near one of its names, and one whose nearest is one
        closest, claimed = np.full(n, -1.0), np.full(n, -1.0)
        np.maximum.at(closest, ids[of_kind], all_sims[rows][:, of_kind].max(0))
        np.maximum.at(claimed, ids[near[mine]], best[mine])
        ok[kind] = (closest >= SUPPORT_MIN) & (claimed >= CLAIM_MIN)
    near, best = all_near[~is_word], all_best[~is_word]
    # a phrase sharing a word with a nearer one that names what the model does not have
    # names no creature or thing: "build a" of "build a windmill" is no house, "cow moos"
    # no deer; "a fox" of "a fox sleeps by the windmill" is still a fox
    unknown = kinds[near] == NAME_KINDS.index("unknown")
    free = ~_covered_by_unknown(phrases, unknown, best)
    lacks = lacks_at = None
    if unknown.any() and best[unknown].max() >= NAMED_PLAIN:
        lacks_at = int(np.flatnonzero(unknown)[best[unknown].argmax()])
        lacks = int(ids[near[lacks_at]])
    # creatures: the nearest phrase whose nearest name of all is one of theirs
    mine = (kinds[near] == NAME_KINDS.index("creature")) & free
    creature = None  # weights without creature names: no such rule
    if (kinds == NAME_KINDS.index("creature")).any():
        creature = np.zeros(len(spec.CREATURES))
        np.maximum.at(creature, ids[near[mine]], best[mine])
    # things: the nearest phrase to one of their names, whatever its nearest name of all
    thing, of_thing = None, kinds == NAME_KINDS.index("thing")
    if of_thing.any():
        thing, to_thing = np.zeros(len(spec.THINGS)), sims[free][:, of_thing]
        np.maximum.at(thing, ids[of_thing], to_thing.max(0, initial=0.0))
        if free.any():
            rows = to_thing.argmax(0)  # per name, its nearest free phrase
            nearest = to_thing[rows, np.arange(len(rows))]
            at["thing"] = _naming_phrase(
                np.flatnonzero(free)[rows], ids[of_thing], nearest, len(thing)
            )
    return PhraseReading(
        biome=biome,
        weather=scores["weather"],
        time=scores["time"],
        weather_ok=ok["weather"],
        time_ok=ok["time"],
        creature=creature,
        thing=thing,
        lacks=lacks,
        texts=phrases + words,
        at=at,
        lacks_at=lacks_at,
    )


def agreed_biomes(
    model: WorldModel,
    vecs: np.ndarray,
    per: np.ndarray,
    near_kind: np.ndarray,
    phrases: list[str],
    places: set[str],
    device: torch.device | str = "cpu",
) -> np.ndarray:
    """Per biome: whether at least AGREED_PHRASES phrases name it by both readings: its name
    is the phrase's nearest of all (at AGREED_CLAIM_MIN or more), and the prompt heads read
    the phrase alone as it (AGREED_HEAD_MIN). A held-out name is far from every name ("vine-
    choked tropics" 0.44-0.54 from the jungle's) but the heads know it. A phrase sharing a
    word of `places` (words that alone name a biome) with one nearer to another biome is
    that one's: "a cavern of" is a cave on its own, but "cavern of blue ice" is nearer an
    ice cave; "half" of "half stagnant wetlands, half sea of dunes" names no place."""
    with torch.no_grad():
        heads = model.prompt_heads(torch.from_numpy(vecs).to(device))
    head = torch.softmax(heads["biome"].float(), -1).cpu().numpy()
    nearest, rows = per.argmax(1), np.arange(len(per))
    top = per[rows, nearest]
    names_a_biome = near_kind == NAME_KINDS.index("biome")  # its nearest name of all
    both = names_a_biome & (top >= AGREED_CLAIM_MIN) & (head[rows, nearest] >= AGREED_HEAD_MIN)
    words = [set(p.split()) & places for p in phrases]
    named = np.flatnonzero(names_a_biome & (top >= BIOME_CLAIM_MIN))
    counted = both.copy()
    for i in np.flatnonzero(both):
        counted[i] = not any(
            nearest[j] != nearest[i] and top[j] > top[i] and words[i] & words[j] for j in named
        )
    return np.bincount(nearest[counted], minlength=per.shape[1]) >= AGREED_PHRASES


def _claiming_phrases(nearest: np.ndarray, top: np.ndarray) -> np.ndarray:
    """Per biome, the phrase nearest to its names among those nearest to it of all biomes (the
    one that claims it; -1: none)."""
    claimer = np.full(len(spec.BIOMES), -1)
    for b in np.unique(nearest):
        rows = np.flatnonzero(nearest == b)
        claimer[b] = rows[np.argmax(top[rows])]
    return claimer


def _named_apart(phrases: list[str], claimer: np.ndarray) -> np.ndarray:
    """(biomes, biomes) bool: whether the phrases claiming the two biomes (`_claiming_phrases`)
    share no word but function words: "snowy mountains" and "a desert" name two places; "a
    maple forest" and "maple forest" one (an autumn forest)."""
    n = len(spec.BIOMES)
    words = _content_words(phrases)
    out = np.zeros((n, n), bool)
    for a in np.flatnonzero(claimer >= 0):
        for b in np.flatnonzero(claimer >= 0):
            out[a, b] = a != b and not words[claimer[a]] & words[claimer[b]]
    return out


def _part_of_a_thing(
    phrases: list[str], thing: np.ndarray, best: np.ndarray | None = None
) -> np.ndarray:
    """Per phrase: whether it lies inside a longer phrase marked `thing` (its nearest name is a
    creature or a scene detail), at least as close by `best` (None: however close). Such a
    phrase names no atmosphere or time: "a dusty" of "a dusty trade road" is the road's (with
    the weight of `PHRASE_NAME_WEIGHT` it made the demo world The Last Caravan a sandstorm); nor
    a place, inside a creature's phrase ("an arctic" of "an arctic fox")."""
    if best is None:
        best = np.ones(len(phrases))
    out = np.zeros(len(phrases), bool)
    for j in np.flatnonzero(thing):
        outer = f" {phrases[j]} "
        for i, phrase in enumerate(phrases):
            if not out[i] and best[j] >= best[i] and len(phrase) < len(phrases[j]):
                out[i] = f" {phrase} " in outer
    return out


def _leans_on_a_creature(phrases: list[str], creature: np.ndarray) -> np.ndarray:
    """Per phrase: whether it names a place only through a creature's words: it lies inside a
    phrase marked `creature` (its nearest name is a creature), or runs into one and every word
    of it that is not a function word is that phrase's too ("where an arctic" of "... a seashore
    where an arctic fox roams" is 0.74 from the snow's names and made the seashore a snowfield;
    "an arctic" of "an arctic fox" is inside it)."""
    out = _part_of_a_thing(phrases, creature)
    words, content = [p.split() for p in phrases], _content_words(phrases)
    for j in np.flatnonzero(creature):
        for i in np.flatnonzero(~out):
            if content[i] and content[i] <= content[j]:
                a, b = words[i], words[j]
                out[i] = any(a[-k:] == b[:k] or a[:k] == b[-k:] for k in range(1, len(a)))
    return out


def _content_words(phrases: list[str]) -> list[set[str]]:
    return [set(p.split()) - FUNCTION_WORDS for p in phrases]


def _in_place_words(phrases: list[str], words: list[str], word_kinds: np.ndarray) -> np.ndarray:
    """Per phrase: whether its words (not function words) all name places, each alone nearest
    a biome's name (`word_kinds`: the kind of each word's nearest name). Such a phrase names no
    atmosphere: "a snowbound" of "a snowbound valley" (the eval split's held-out wording of a
    snowfield) is 0.74 from "snowing", but "snowbound" alone is nearest "snowfield"."""
    place = {w for w, k in zip(words, word_kinds, strict=True) if k == NAME_KINDS.index("biome")}
    return np.array([bool(c) and c <= place for c in _content_words(phrases)], dtype=bool)


def _covered_by_unknown(phrases: list[str], unknown: np.ndarray, best: np.ndarray) -> np.ndarray:
    """Per phrase: whether it shares a word (not a function word) with a phrase whose nearest
    name of all is one of `vocabulary.UNKNOWN` (`unknown`), at least as close (`best`)."""
    words = _content_words(phrases)
    out = unknown.copy()
    for j in np.flatnonzero(unknown):
        for i in np.flatnonzero(~out):
            out[i] = best[j] >= best[i] and bool(words[i] & words[j])
    return out


def _naming_phrase(rows: np.ndarray, classes: np.ndarray, cos: np.ndarray, n: int) -> np.ndarray:
    """Per class of n: the row (phrase) of the nearest (rows, classes, cos) naming it, or -1."""
    out, best = np.full(n, -1), np.full(n, -np.inf)
    for r, c, v in zip(rows, classes, cos, strict=True):
        if v > best[c]:
            out[c], best[c] = r, v
    return out


def phrase_choice(
    logits: torch.Tensor,
    scores: np.ndarray | None,
    mentioned: np.ndarray | None = None,
    default: int = 0,
) -> int:
    """A head's class, its log-probability weighed with the phrases that name a class; with
    `mentioned` (per class, bool), a class the text does not mention is ruled out unless it is
    the `default`."""
    logp = torch.log_softmax(logits.double(), -1).numpy()
    if scores is not None:
        past = np.minimum(scores, PHRASE_NAME_PLAIN) - PHRASE_NAME_MIN
        logp = logp + PHRASE_NAME_WEIGHT * np.where(scores > 0, past, 0.0)
    if mentioned is not None:
        ruled_out = ~np.asarray(mentioned, dtype=bool)
        ruled_out[default] = False
        logp = np.where(ruled_out, -np.inf, logp)
    return int(np.argmax(logp))


def named_choice(
    choice: int, named: np.ndarray | None, bar: float = NAMED_MIN, plain: float | None = None
) -> int:
    """A creature or thing a head chose (-1: none), kept only where the text's phrases name it
    at `bar` (`PhraseReading.creature`, `.thing`); otherwise, with `plain`, the one they name
    at `plain` or nearer, if any."""
    if named is None:
        return choice
    if choice >= 0 and named[choice] >= bar:
        return choice
    best = int(np.argmax(named))
    return best if plain is not None and named[best] >= plain else -1
