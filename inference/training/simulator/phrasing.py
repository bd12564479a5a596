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

from inference.world import spec
from inference.world import text as text_encoder

SPLITS = ("train", "eval", "fit", "tune")
EVAL_HELD_OUT = 0.5  # how often an eval (or tune) draw takes a held-out entry

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
# "spotted toad", "ginger tom") are no name of `world/data/own_names.json`.
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


def train_part(options: list) -> list:
    """The entries `split="train"` draws from."""
    return options[:-1]


def held_out(options: list) -> list:
    """The entries only `split="eval"` draws."""
    return options[-1:]


def tuning_part(options: list) -> list:
    """The training entry `split="tune"` holds back from `split="fit"` (lists of three or
    more): choices made on the tune split meet wording they never saw without reading the
    eval split's held-out entries."""
    return options[-2:-1] if len(options) > 2 else []


def _pick(rng: np.random.Generator, options: list, split: str = "train"):
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    pool = None
    if split in ("eval", "tune") and rng.random() < EVAL_HELD_OUT:
        pool = held_out(options) if split == "eval" else tuning_part(options)
    if not pool:
        tuned = tuning_part(options)
        pool = [o for o in train_part(options) if split != "fit" or o not in tuned]
    return pool[rng.integers(len(pool))]


def tuning_entries() -> set[str]:
    """Every entry of every bank that `split="fit"` never draws (`tuning_part`)."""
    out: set[str] = set()
    for bank in _BANKS.values():
        for options in bank.values() if isinstance(bank, dict) else (bank,):
            if isinstance(options, list):
                out.update(o for o in tuning_part(options) if isinstance(o, str))
    return out


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


# What a part of a text names: its words (the first of these found), its kind and value.
Said = tuple[tuple[str, ...], str, int]


def word_labels(text: str, said: list[Said]) -> list[tuple[str, int] | None]:
    """Per word of a text (`text.words`), the (kind, value) the part it belongs to names, or
    None: the generator knows each part it inserts, so the labels come from it, not a rule."""
    words = text_encoder.words(text)
    out: list[tuple[str, int] | None] = [None] * len(words)
    for forms, kind, value in said:
        for form in forms:
            part = text_encoder.words(form)
            at = next(
                (
                    i
                    for i in range(len(words) - len(part) + 1)
                    if words[i : i + len(part)] == part
                    and all(x is None for x in out[i : i + len(part)])
                ),
                None,
            )
            if part and at is not None:
                out[at : at + len(part)] = [(kind, value)] * len(part)
                break
    return out


def world_prompt(rng: np.random.Generator, split: str = "train") -> tuple[str, dict]:
    """A random world description and its labels: biome, biome2 (-1 unless two are mixed),
    weather (0 = clear when not mentioned), time (index of "day" when not mentioned) and
    creature (-1 when none is mentioned)."""
    text, labels, _ = labelled_world_prompt(rng, split)
    return text, labels


def labelled_world_prompt(
    rng: np.random.Generator, split: str = "train"
) -> tuple[str, dict, list[Said]]:
    """`world_prompt` (the same draws, the same text) and the parts that name its place, sky,
    time and creature (`word_labels` turns them into per-word labels)."""
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
    said: list[Said] = []

    # the place: one biome (maybe weather as its adjective: "a foggy swamp") or a mix of two
    adjective = None
    if say_weather and w_name != "clear" and biome2 < 0 and rng.random() < 0.2:
        adjective, say_weather = _pick(rng, WEATHER_ADJ[w_name], split), False
        said.append(((adjective,), "weather", weather))
    x, xb = _biome_phrase(rng, biome, split, adjective)
    said.append(((xb,), "biome", biome))
    if biome2 >= 0:
        y, yb = _biome_phrase(rng, biome2, split, "")
        said.append(((yb,), "biome", biome2))
        place = _pick(rng, BIOME_JOINERS, split).format(x=x, y=y, xb=xb, yb=yb)
    else:
        place = x

    # the body: the place itself, a scene in it, or a creature in it
    forms = _creature_forms(rng, creature, split) if creature >= 0 else None
    if forms:
        said.append(((forms["p"], forms["c"]), "creature", creature))
    templates = SCENE_TEMPLATES
    if forms and rng.random() < 0.3:
        body = _pick(rng, CREATURE_LEAD, split).format(w=place, **forms)
        forms = None
    elif say_time and rng.random() < 0.3:
        scene = _pick(rng, TIME_NOUNS[t_name], split)
        said.append(((scene,), "time", time))
        if say_weather and rng.random() < 0.6:
            sky = _pick(rng, WEATHER_ADJ[w_name], split)
            scene, say_weather = f"{sky} {scene}", False
            said.append(((sky,), "weather", weather))
        body = _pick(rng, SCENES, split).format(s=_a(scene), w=place)
        say_time = False
    else:
        body, templates = place, PLACE_TEMPLATES
    text = _pick(rng, templates, split).format(w=body)

    # what is left to say, in any order, one of weather/time maybe up front
    extras = []
    if say_weather:
        extras.append(_pick(rng, WEATHER_WORLD[w_name], split))
        said.append(((extras[-1],), "weather", weather))
    if say_time:
        extras.append(_pick(rng, TIME_WORLD[t_name], split))
        said.append(((extras[-1],), "time", time))
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
    return text, labels, said


def _event_phrase(rng: np.random.Generator, kind: str, value: int, split: str) -> tuple[str, Said]:
    """An event's phrasing and the part of it that names it (a creature's noun, else all)."""
    if kind == "weather":
        text = _pick(rng, WEATHER_EVENTS[spec.WEATHERS[value]], split)
    elif kind == "time":
        text = _pick(rng, TIME_EVENTS[spec.TIMES[value]], split)
    elif kind == "creature":
        name = spec.CREATURES[value]
        forms = _creature_forms(rng, value, split)
        if rng.random() < 0.35:
            text = f"{forms['a']} {_pick(rng, CREATURE_MOVES[name], split)}"
        else:
            text = _pick(rng, CREATURE_EVENTS, split).format(**forms)
        return text, ((forms["p"], forms["c"]), kind, value)
    elif kind == "thing":
        text = _pick(rng, THING_EVENTS[spec.THINGS[value]], split)
    else:
        raise ValueError(f"unknown event kind {kind!r}")
    return text, ((text,), kind, value)


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
    text, labels, _ = labelled_event_text(rng, split)
    return text, labels


def labelled_event_text(
    rng: np.random.Generator, split: str = "train"
) -> tuple[str, dict, list[Said]]:
    """`event_text` (the same draws, the same text) and the parts that name its events."""
    labels = dict.fromkeys(_EVENT_KINDS, -1)
    if rng.random() < 0.1:
        return _pick(rng, NON_EVENTS, split), labels, []
    n = 1 if rng.random() < 0.7 else 2
    texts, said = [], []
    for k in rng.choice(len(_EVENT_KINDS), size=n, replace=False):
        kind = _EVENT_KINDS[int(k)]
        labels[kind] = int(rng.integers(_KIND_SIZES[kind]))
        text, part = _event_phrase(rng, kind, labels[kind], split)
        texts.append(text)
        said.append(part)
    if n == 1:
        return _with_prefix(rng, texts[0], split), labels, said
    joiners = COMMAND_JOINERS if _is_command(texts[1]) else JOINERS
    return _pick(rng, joiners, split).join(texts), labels, said


def event_for(rng: np.random.Generator, kind: str, value: int, split: str = "eval") -> str:
    """One phrasing of one given event (kind: weather, time, creature or thing)."""
    return _event_phrase(rng, kind, int(value), split)[0]


_check_banks()
