"""What a text asks of a world: a description's place, sky, time of day, creature and things,
or an event's change. The text heads read the whole text, the phrases what it names plainly
(`phrases`), the open-vocabulary reader the things beyond the model's own (`reading`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from inference.world import processes, spec, vocabulary
from inference.world import text as text_encoder
from inference.world.model import WorldModel
from inference.world.phrases import (
    NAMED_PLAIN,
    THING_SUPPORT_MIN,
    PhraseReading,
    named_choice,
    phrase_choice,
    read_phrases,
)
from inference.world.places import biome_mix, shown_biomes
from inference.world.reading import Match, Reader

SUGGESTIONS = 4  # events offered for text the model cannot do, from these (kind, phrasing)
PLAIN_EVENTS = [(kind, p) for kind, by in spec.EVENT_PHRASES.items() for p in by.values()]
CLEAR, DAY = spec.WEATHERS.index("clear"), spec.TIMES.index("day")


class PromptError(ValueError):
    """Empty, too long (> 500 chars) or unusable text."""


class UnsupportedEvent(PromptError):
    """Text naming nothing this model can do: ``unsupported``, not moderation's ``rejected``;
    ``suggest``: events it can do, nearest in meaning first."""

    def __init__(self, message: str, suggest: tuple[str, ...] = ()):
        super().__init__(message)
        self.suggest = suggest


def check_text(text: str) -> str:
    """A prompt or event text, whitespace folded; PromptError when empty or too long."""
    if not isinstance(text, str) or not text.strip():
        raise PromptError("text is empty")
    if len(text) > spec.MAX_PROMPT_CHARS:
        raise PromptError(f"text is longer than {spec.MAX_PROMPT_CHARS} characters")
    return " ".join(text.split())


@dataclass
class PromptReading:
    """What a world's description asks for (`WorldEngine.read_prompt`)."""

    text: str
    biome_probs: np.ndarray  # (BIOMES,): one biome, or two mixed
    weather: int
    time: int  # index in TIMES
    creature: int  # -1: none
    text_emb: np.ndarray  # the MiniLM embedding the generator is conditioned on
    lacks: str | None = None  # what the text plainly names that the model has no concept for
    objects: tuple[Match, ...] = ()  # open-vocabulary things it names, placed near the spawn

    def names(self) -> dict:
        """The reading as people say it (the world page, the API): the place (one, or two
        mixed), the sky, the time of day, the creature (None) and what it lacks (None)."""
        return {
            "places": [spec.shown("biome", name) for name in shown_biomes(self.biome_probs)],
            "sky": spec.shown("weather", spec.WEATHERS[self.weather]),
            "time": spec.TIMES[self.time],
            "creature": spec.shown("creature", spec.CREATURES[self.creature])
            if self.creature >= 0
            else None,
            "things": [m.concept.name for m in self.objects],
            "lacks": self.lacks,
        }


def _lacking(phrases: PhraseReading) -> str | None:
    """What a text plainly names that the model has no concept for (`vocabulary.UNKNOWN`)."""
    if phrases.lacks is not None and phrases.lacks < len(vocabulary.UNKNOWN):
        return vocabulary.UNKNOWN[phrases.lacks]
    return None


# A text that plainly names something the model does not have (`PhraseReading.lacks`) and no
# creature it has is about that thing; what else it names after it in a place phrase is its
# setting ("a snake slithers through the grass" placed a path, "a spider crawls over the rocks"
# rocks, "a dragon flies across the sky" cleared the sky), and so is what the heads read that no
# phrase names plainly ("a pig snorts in the mud": a sandstorm; a thing this close to one of its
# names, an atmosphere or time of day one of whose names is a phrase's nearest at
# PHRASE_NAME_MIN). "light a campfire next to the car" and "a dragon flies over and it starts
# to rain" still act.
SETTING_THING_MAX = 0.6
# the words that open a place phrase; determiners and "of"/"to" between them and the noun are
# skipped ("out of the ruins", "next to the house"; "starts to rain" is no place)
PLACE_WORDS = frozenset(
    """in on at by near beside behind through across over under around along past into onto
    out from among above below beneath inside outside toward towards next front top off
    against amid within""".split()
)
GLUE_WORDS = frozenset(
    "a an the some its his her their my your our this that these those of to".split()
)


def _word_start(words: list[str], phrase: str) -> int:
    """Index of the first word of a phrase's first occurrence in words (-1: not found)."""
    p = phrase.split()
    return next((i for i in range(len(words)) if words[i : i + len(p)] == p), -1)


def _in_a_place_phrase(words: list[str], phrase: str, after: str) -> bool:
    """Whether a word of a phrase follows the phrase `after` and a place word: the grass of "a
    snake slithers through the grass" after "a snake" (glue words between are skipped)."""
    start, first = _word_start(words, phrase), _word_start(words, after)
    if start < 0 or first < 0 or start <= first:
        return False
    for k, word in enumerate(phrase.split()):
        if word in GLUE_WORDS | PLACE_WORDS:
            continue
        i = start + k - 1
        while i > first and words[i] in GLUE_WORDS:
            i -= 1
        if i > first and words[i] in PLACE_WORDS:
            return True
    return False


def _drop_the_setting(choice: dict[str, int], phrases: PhraseReading, text: str) -> None:
    """In place: no weather, time or thing the text names only as the setting of what the
    model lacks (`SETTING_THING_MAX`)."""
    words = text_encoder.words(text)
    lacking = phrases.texts[phrases.lacks_at]
    for kind in ("weather", "time", "thing"):
        c, named = choice[kind], getattr(phrases, kind)
        if c < 0 or named is None:
            continue
        plain = named[c] >= SETTING_THING_MAX if kind == "thing" else named[c] > 0
        where = phrases.at[kind][c] if kind in phrases.at else -1
        if not plain or (where >= 0 and _in_a_place_phrase(words, phrases.texts[where], lacking)):
            choice[kind] = -1


def text_heads(
    model: WorldModel, text: str, heads, emb=None, device: torch.device | str = "cpu"
) -> dict[str, torch.Tensor]:
    """One text through a set of text heads (`WorldModel.prompt_heads`, `.event_heads`)."""
    if emb is None:
        emb = text_encoder.embed([text])[0]
    with torch.no_grad():
        out = heads(torch.from_numpy(emb[None]).to(device))
    return {k: torch.nan_to_num(v[0].float()).cpu() for k, v in out.items()}


def new_things(reader: Reader, text: str, also: tuple[str, ...] = ()) -> list[Match]:
    """The open-vocabulary things a text names, read beside the model's own creatures and
    things (and `also`: the processes it starts): words that name one of those are the
    model's ("a fox appears" is the fox it has, not a second one) and place nothing new."""
    return reader.things(text, known=(*spec.DRAWN_NAMES, *also))


def read_prompt(
    prompt: str, *, model: WorldModel, reader: Reader, device: torch.device | str = "cpu"
) -> PromptReading:
    """What a world's description asks for (no world is made); PromptError on bad text."""
    prompt = check_text(prompt)
    emb = text_encoder.embed([prompt])[0]
    heads = text_heads(model, prompt, model.prompt_heads, emb, device)
    phrases = read_phrases(model, prompt, device=device)
    creature = named_choice(
        int(heads["creature"].argmax()) - 1, phrases.creature, plain=NAMED_PLAIN
    )
    objects = new_things(reader, prompt)
    return PromptReading(
        text=prompt,
        biome_probs=biome_mix(
            torch.softmax(heads["biome"], -1).numpy(),
            mixed=float(torch.softmax(heads["mixed"], -1)[1]),
            phrase_scores=phrases.biome,
        ),
        weather=phrase_choice(heads["weather"], phrases.weather, phrases.weather_ok, CLEAR),
        time=phrase_choice(heads["time"], phrases.time, phrases.time_ok, DAY),
        creature=creature,
        text_emb=emb.astype(np.float32),
        lacks=None if objects else _lacking(phrases),
        objects=tuple(objects),
    )


def read_event(
    text: str, *, model: WorldModel, reader: Reader, device: torch.device | str = "cpu"
) -> dict:
    """What an event text asks for: weather, time, creature, thing and process (an index
    into spec.PROCESSES: "a fire starts in the forest"), each an index or -1 (no change), and
    ``objects``: the open-vocabulary things it names (`Match`es); UnsupportedEvent when it is
    nothing the model can do."""
    folded = check_text(text)
    emb = text_encoder.embed([folded])[0]  # one embedding for the event heads and the process head
    heads = text_heads(model, folded, model.event_heads, emb, device=device)
    choice = {k: int(v.argmax()) - 1 for k, v in heads.items()}  # -1: no such event
    # atmospheres and times weighed with the phrases that name one, as a prompt's are: "a
    # snowstorm hits" is near the name "in a snowstorm" where the head alone read thunder
    phrases = read_phrases(model, text, places=False, device=device)
    for kind in ("weather", "time"):
        named, ok = getattr(phrases, kind), getattr(phrases, f"{kind}_ok")
        if named is not None:  # class 0, "none", is named by nothing and needs no phrase
            chosen = phrase_choice(heads[kind], np.r_[0.0, named], np.r_[True, ok], default=0)
            choice[kind] = chosen - 1
    # a creature needs a phrase that names it: "an elephant appears" was a crab; a thing, a
    # phrase near one of its names: "the castle explodes" was a lava pool
    # or the creature a phrase plainly names where the head read none or another ("add a
    # moose": a bear)
    choice["creature"] = named_choice(choice["creature"], phrases.creature, plain=NAMED_PLAIN)
    choice["thing"] = named_choice(choice["thing"], phrases.thing, THING_SUPPORT_MIN)
    if phrases.lacks is not None and choice["creature"] < 0:
        _drop_the_setting(choice, phrases, text)
    choice["process"] = processes.read(folded, emb)
    # a process read is the model's own, by its name and its plain phrasing: "a fire starts in
    # the forest" read as a whole was a fire engine of the open vocabulary
    name = spec.PROCESSES[choice["process"]] if choice["process"] >= 0 else None
    started = (name, spec.EVENT_PHRASES["process"][name]) if name else ()
    if started:
        # the things a fire text names are what burns ("the trees catch fire"), and its fire
        # words read as a campfire to the event head, which never met a fire that spreads
        choice["thing"] = -1
    choice["objects"] = new_things(reader, text, also=started)
    if all(v < 0 for k, v in choice.items() if k != "objects") and not choice["objects"]:
        reason = "no world event recognised in the text"
        if lacking := _lacking(phrases):  # say what it lacks where the text plainly names it
            reason = f"the world model has no {lacking}"
        raise UnsupportedEvent(reason, suggest=nearest_events(text))
    return choice


def nearest_events(text: str, n: int = SUGGESTIONS) -> tuple[str, ...]:
    """The plain phrasings of the `n` events nearest in meaning to a text, at most two of a
    kind: "a horse gallops by" is offered a deer first, not a thunderstorm."""
    sims = text_encoder.embed([text, *(p for _, p in PLAIN_EVENTS)])
    out, per_kind = [], dict.fromkeys(spec.EVENT_PHRASES, 0)
    for i in np.argsort(-(sims[1:] @ sims[0])):
        kind, phrase = PLAIN_EVENTS[i]
        if per_kind[kind] < 2:
            out.append(phrase)
            per_kind[kind] += 1
        if len(out) == n:
            break
    return tuple(out)
