"""World and event specs rendered into many natural-language phrasings (templates x synonyms).

Labels use the indices of `inference.world.spec`; -1 means "not mentioned / no change" (world
prompts default to clear weather at "day" instead).

Every synonym and template list holds back its last entry for evaluation: `split="train"` never
draws it, `split="eval"` draws it half the time, so evaluation meets phrasings training never
saw. The plain phrasings of `spec.EVENT_PHRASES` all sit in the training part of the banks.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from inference.world import spec, vocabulary

SPLITS = ("train", "eval")
EVAL_HELD_OUT = 0.5  # how often an eval draw takes a held-out entry

# The banks are data (inference/training/data/phrasing.json), read once at import; what each
# holds, and the placeholders its templates fill:
BANKS_FILE = Path(__file__).resolve().parents[1] / "data" / "phrasing.json"
_BANKS = json.loads(BANKS_FILE.read_text())

# world prompts
BIOME_NOUNS: dict[str, list[str]] = _BANKS["biome_nouns"]
ADJECTIVES: list[str] = _BANKS["adjectives"]
# Two biomes in one prompt: {x}/{y} are noun phrases with articles, {xb}/{yb} the bare nouns.
# The first named is "biome", the second "biome2".
BIOME_JOINERS: list[str] = _BANKS["biome_joiners"]
WEATHER_WORLD: dict[str, list[str]] = _BANKS["weather_world"]
# Weather as an adjective: "a rainy night in the city", "a foggy swamp" (clear: scenes only).
WEATHER_ADJ: dict[str, list[str]] = _BANKS["weather_adj"]
TIME_WORLD: dict[str, list[str]] = _BANKS["time_world"]
# Time as the head of a scene: "a stormy night in the desert".
TIME_NOUNS: dict[str, list[str]] = _BANKS["time_nouns"]
SCENES: list[str] = _BANKS["scenes"]
# The first noun of each creature is its spec name. The held-out last ones ("hind", "starling",
# "spotted toad", "ginger tom") are no name of `vocabulary`, so no weights were trained on them.
CREATURE_NOUNS: dict[str, list[str]] = _BANKS["creature_nouns"]
# {a}: the creature with its article, {p}: its plural.
CREATURE_WORLD: list[str] = _BANKS["creature_world"]
CREATURE_LEAD: list[str] = _BANKS["creature_lead"]
# Scene details that name no biome, atmosphere, time or creature: a share of prompts carry one,
# so the heads learn that "lit by lanterns" or "with wooden docks" changes none of those.
DETAILS: list[str] = _BANKS["details"]
DETAIL_SHARE = 0.4
# Prompts around a place ({w} a biome or a mix of two) ...
PLACE_TEMPLATES: list[str] = _BANKS["place_templates"]
# ... and around any scene ("a rainy night in ...", "a fox in ...").
SCENE_TEMPLATES: list[str] = _BANKS["scene_templates"]

# events
WEATHER_EVENTS: dict[str, list[str]] = _BANKS["weather_events"]
TIME_EVENTS: dict[str, list[str]] = _BANKS["time_events"]
CREATURE_EVENTS: list[str] = _BANKS["creature_events"]
# How each creature moves, after "{a} ": "a fox runs past", "a crab scuttles past".
CREATURE_MOVES: dict[str, list[str]] = _BANKS["creature_moves"]
THING_EVENTS: dict[str, list[str]] = _BANKS["thing_events"]
# Openers: before statements ("out of nowhere a fox appears"), before commands ("please ...").
EVENT_PREFIXES: list[str] = _BANKS["event_prefixes"]
COMMAND_PREFIXES: list[str] = _BANKS["command_prefixes"]
COMMAND_VERBS = frozenset(_BANKS["command_verbs"])
# Between two events; before a command ("... and build a fence") only the COMMAND_JOINERS.
JOINERS: list[str] = _BANKS["joiners"]
COMMAND_JOINERS: list[str] = _BANKS["command_joiners"]
# Text that names nothing the model can do: the heads answer "none" ("unsupported").
NON_EVENTS: list[str] = _BANKS["non_events"]

_EVENT_KINDS = ("weather", "time", "creature", "thing")
_KIND_SIZES = {
    "weather": len(spec.WEATHERS),
    "time": len(spec.TIMES),
    "creature": len(spec.CREATURES),
    "thing": len(spec.THINGS),
}
_IRREGULAR_PLURALS = {
    "wolf": "wolves",
    "deer": "deer",
    "fish": "fish",
    "goldfish": "goldfish",
    "trout": "trout",
}


def _check_banks() -> None:
    """The banks cover the spec exactly, every list holds something back, and every plain
    phrasing of the spec is in a training part."""
    for bank, names in (
        (BIOME_NOUNS, spec.BIOMES),
        (WEATHER_WORLD, spec.WEATHERS),
        (WEATHER_ADJ, spec.WEATHERS),
        (WEATHER_EVENTS, spec.WEATHERS),
        (TIME_WORLD, spec.TIMES),
        (TIME_NOUNS, spec.TIMES),
        (TIME_EVENTS, spec.TIMES),
        (CREATURE_NOUNS, spec.CREATURES),
        (CREATURE_MOVES, spec.CREATURES),
        (THING_EVENTS, spec.THINGS),
    ):
        if list(bank) != list(names):
            raise ValueError(f"phrasing bank keys {list(bank)} != spec {list(names)}")
    lists = [
        *BIOME_NOUNS.values(),
        *WEATHER_WORLD.values(),
        *WEATHER_ADJ.values(),
        *WEATHER_EVENTS.values(),
        *TIME_WORLD.values(),
        *TIME_NOUNS.values(),
        *TIME_EVENTS.values(),
        *CREATURE_NOUNS.values(),
        *CREATURE_MOVES.values(),
        *THING_EVENTS.values(),
        ADJECTIVES,
        BIOME_JOINERS,
        SCENES,
        CREATURE_WORLD,
        CREATURE_LEAD,
        PLACE_TEMPLATES,
        SCENE_TEMPLATES,
        CREATURE_EVENTS,
        EVENT_PREFIXES,
        COMMAND_PREFIXES,
        JOINERS,
        COMMAND_JOINERS,
        NON_EVENTS,
    ]
    if any(len(options) < 2 for options in lists):
        raise ValueError("every phrasing list needs a training part and a held-out entry")
    for c, nouns in CREATURE_NOUNS.items():
        if nouns[0] != c:
            raise ValueError(f"the first noun of {c!r} must be its spec name")
    plain = {"weather": WEATHER_EVENTS, "time": TIME_EVENTS, "thing": THING_EVENTS}
    for kind, bank in plain.items():
        for name, text in spec.EVENT_PHRASES[kind].items():
            if text not in train_part(bank[name]):
                raise ValueError(f"{text!r} ({kind} {name}) is not a training phrasing")
    if "{a} appears" not in train_part(CREATURE_EVENTS):
        raise ValueError("'a {creature} appears' is not a training phrasing")


def concept_names() -> list[tuple[str, int, str]]:
    """(kind, index, name) for the training part of every biome noun, atmosphere and time of
    day phrasing, of every creature noun and of every thing's event phrasings, and ("other", 0,
    ...) for scene details, plus `vocabulary`'s words (("unknown", its index, ...) for what the
    model does not have): the names a text's phrases are matched to (a phrase nearest to a
    creature, a thing, a detail or an unknown names no atmosphere; a creature the heads read
    needs a phrase nearest to one of its names).
    The event banks' phrasings name the same atmospheres and times ("a downpour begins", "day
    breaks"): a prompt's "in a steady downpour" or "at daybreak" finds its concept through them
    where the world phrasings' words miss it."""
    out = []
    for kind, banks, keys in (
        ("biome", (BIOME_NOUNS,), spec.BIOMES),
        ("weather", (WEATHER_WORLD, WEATHER_ADJ, WEATHER_EVENTS), spec.WEATHERS),
        ("time", (TIME_WORLD, TIME_NOUNS, TIME_EVENTS), spec.TIMES),
        ("creature", (CREATURE_NOUNS,), spec.CREATURES),
        ("thing", (THING_EVENTS,), spec.THINGS),
    ):
        for bank in banks:
            for key, options in bank.items():
                out += [(kind, keys.index(key), name) for name in train_part(options)]
    out += [("other", 0, name) for name in train_part(DETAILS)]
    # the words players use beyond the banks, and those for what the model does not have
    for kind, keys in (
        ("biome", spec.BIOMES),
        ("creature", spec.CREATURES),
        ("thing", spec.THINGS),
    ):
        for key, names in vocabulary.SYNONYMS[kind].items():
            out += [(kind, keys.index(key), name) for name in names]
    out += [("unknown", i, name) for i, name in enumerate(vocabulary.UNKNOWN)]
    return out


def train_part(options: list) -> list:
    """The entries `split="train"` draws from."""
    return options[:-1]


def held_out(options: list) -> list:
    """The entries only `split="eval"` draws."""
    return options[-1:]


def _pick(rng: np.random.Generator, options: list, split: str = "train"):
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    pool = held_out(options) if split == "eval" and rng.random() < EVAL_HELD_OUT else None
    pool = pool or train_part(options)
    return pool[rng.integers(len(pool))]


def _head_word(noun: str) -> str:
    """The word that decides number: "sea of dunes" -> "sea", "autumn woods" -> "woods"."""
    for sep in (" of ", " in ", " beneath "):
        noun = noun.split(sep)[0]
    return noun.split()[-1]


def _is_plural(noun: str) -> bool:
    head = _head_word(noun)
    return head.endswith("s") and not head.endswith(("ss", "is", "us"))


def _with_article(rng: np.random.Generator, words: str, plural: bool) -> str:
    if plural:
        return words if rng.random() < 0.5 else f"the {words}"
    if rng.random() < 0.2:
        return f"the {words}"
    return f"{'an' if words[0] in 'aeiou' else 'a'} {words}"


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def _plural(noun: str) -> str:
    *rest, last = noun.split()
    if last in _IRREGULAR_PLURALS:
        last = _IRREGULAR_PLURALS[last]
    elif last.endswith("y") and last[-2] not in "aeiou":
        last = last[:-1] + "ies"
    elif last.endswith(("s", "x", "sh", "ch")):
        last += "es"
    else:
        last += "s"
    return " ".join([*rest, last])


def _biome_phrase(rng, biome: int, split: str, adjective: str | None = None) -> tuple[str, str]:
    """(noun phrase with article, bare noun) of one biome."""
    noun = _pick(rng, BIOME_NOUNS[spec.BIOMES[biome]], split)
    if adjective is None:
        adjective = _pick(rng, ADJECTIVES, split) if rng.random() < 0.4 else ""
    words = f"{adjective} {noun}".strip()
    return _with_article(rng, words, _is_plural(noun)), noun


def _creature_forms(rng, creature: int, split: str) -> dict:
    noun = _pick(rng, CREATURE_NOUNS[spec.CREATURES[creature]], split)
    return {"c": noun, "a": _a(noun), "p": _plural(noun)}


def world_prompt(rng: np.random.Generator, split: str = "train") -> tuple[str, dict]:
    """A random world description and its labels: biome, biome2 (-1 unless two are mixed),
    weather (0 = clear when not mentioned), time (index of "day" when not mentioned) and
    creature (-1 when none is mentioned)."""
    n_biomes = len(spec.BIOMES)
    biome = int(rng.integers(n_biomes))
    biome2 = -1
    if rng.random() < 0.3:
        biome2 = int((biome + rng.integers(1, n_biomes)) % n_biomes)
    say_weather, say_time = rng.random() < 0.6, rng.random() < 0.6
    weather = int(rng.integers(len(spec.WEATHERS))) if say_weather else 0
    time = int(rng.integers(len(spec.TIMES))) if say_time else spec.TIMES.index("day")
    creature = int(rng.integers(len(spec.CREATURES))) if rng.random() < 0.35 else -1
    labels = {
        "biome": biome,
        "biome2": biome2,
        "weather": weather,
        "time": time,
        "creature": creature,
    }
    w_name, t_name = spec.WEATHERS[weather], spec.TIMES[time]

    # the place: one biome (maybe weather as its adjective: "a foggy swamp") or a mix of two
    adjective = None
    if say_weather and w_name != "clear" and biome2 < 0 and rng.random() < 0.2:
        adjective, say_weather = _pick(rng, WEATHER_ADJ[w_name], split), False
    x, xb = _biome_phrase(rng, biome, split, adjective)
    if biome2 >= 0:
        y, yb = _biome_phrase(rng, biome2, split, "")
        place = _pick(rng, BIOME_JOINERS, split).format(x=x, y=y, xb=xb, yb=yb)
    else:
        place = x

    # the body: the place itself, a scene in it, or a creature in it
    forms = _creature_forms(rng, creature, split) if creature >= 0 else None
    templates = SCENE_TEMPLATES
    if forms and rng.random() < 0.3:
        body = _pick(rng, CREATURE_LEAD, split).format(w=place, **forms)
        forms = None
    elif say_time and rng.random() < 0.3:
        scene = _pick(rng, TIME_NOUNS[t_name], split)
        if say_weather and rng.random() < 0.6:
            scene, say_weather = f"{_pick(rng, WEATHER_ADJ[w_name], split)} {scene}", False
        body = _pick(rng, SCENES, split).format(s=_a(scene), w=place)
        say_time = False
    else:
        body, templates = place, PLACE_TEMPLATES
    text = _pick(rng, templates, split).format(w=body)

    # what is left to say, in any order, one of weather/time maybe up front
    extras = []
    if say_weather:
        extras.append(_pick(rng, WEATHER_WORLD[w_name], split))
    if say_time:
        extras.append(_pick(rng, TIME_WORLD[t_name], split))
    lead = extras.pop(int(rng.integers(len(extras)))) if extras and rng.random() < 0.2 else None
    if forms:
        extras.append(_pick(rng, CREATURE_WORLD, split).format(**forms))
    if rng.random() < DETAIL_SHARE:
        extras.append(_pick(rng, DETAILS, split))
    rng.shuffle(extras)
    for extra in extras:
        text += (", " if rng.random() < 0.3 else " ") + extra
    if lead:
        text = f"{lead}, {text}"
    return text, labels


def _event_phrase(rng: np.random.Generator, kind: str, value: int, split: str) -> str:
    if kind == "weather":
        return _pick(rng, WEATHER_EVENTS[spec.WEATHERS[value]], split)
    if kind == "time":
        return _pick(rng, TIME_EVENTS[spec.TIMES[value]], split)
    if kind == "creature":
        name = spec.CREATURES[value]
        forms = _creature_forms(rng, value, split)
        if rng.random() < 0.35:
            return f"{forms['a']} {_pick(rng, CREATURE_MOVES[name], split)}"
        return _pick(rng, CREATURE_EVENTS, split).format(**forms)
    if kind == "thing":
        return _pick(rng, THING_EVENTS[spec.THINGS[value]], split)
    raise ValueError(f"unknown event kind {kind!r}")


def _is_command(text: str) -> bool:
    return text.split()[0] in COMMAND_VERBS


def _with_prefix(rng: np.random.Generator, text: str, split: str) -> str:
    if rng.random() >= 0.2:
        return text
    prefixes = COMMAND_PREFIXES if _is_command(text) else EVENT_PREFIXES
    return _pick(rng, prefixes, split) + text


def event_text(rng: np.random.Generator, split: str = "train") -> tuple[str, dict]:
    """A random event phrase (none, one, or two events of different kinds) and its labels:
    weather, time, creature and thing, each an index or -1."""
    labels = dict.fromkeys(_EVENT_KINDS, -1)
    if rng.random() < 0.1:
        return _pick(rng, NON_EVENTS, split), labels
    n = 1 if rng.random() < 0.7 else 2
    texts = []
    for k in rng.choice(len(_EVENT_KINDS), size=n, replace=False):
        kind = _EVENT_KINDS[int(k)]
        labels[kind] = int(rng.integers(_KIND_SIZES[kind]))
        texts.append(_event_phrase(rng, kind, labels[kind], split))
    if n == 1:
        return _with_prefix(rng, texts[0], split), labels
    joiners = COMMAND_JOINERS if _is_command(texts[1]) else JOINERS
    return _pick(rng, joiners, split).join(texts), labels


def event_for(rng: np.random.Generator, kind: str, value: int, split: str = "eval") -> str:
    """One phrasing of one given event (kind: weather, time, creature or thing)."""
    return _event_phrase(rng, kind, int(value), split)


_check_banks()
