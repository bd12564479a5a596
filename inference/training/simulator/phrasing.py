"""World and event specs rendered into many natural-language phrasings (templates x synonyms).

Labels use the indices of `inference.world.spec`; -1 means "not mentioned / no change".
"""

from __future__ import annotations

import numpy as np

from inference.world import spec as ws

BIOME_NOUNS = {
    "meadow": [
        "meadow",
        "grassy meadow",
        "green pasture",
        "open grassland",
        "field of wildflowers",
        "rolling grass field",
        "flowery prairie",
    ],
    "forest": [
        "forest",
        "dense woodland",
        "pine forest",
        "old oak woods",
        "thick jungle of trees",
        "shady grove",
        "deep forest",
    ],
    "desert": [
        "desert",
        "sandy wasteland",
        "sea of dunes",
        "arid badlands",
        "cactus desert",
        "sun-baked sands",
        "dry desert plain",
    ],
    "snow": [
        "snowy tundra",
        "frozen wasteland",
        "winter landscape",
        "icy plain",
        "snowfield",
        "arctic wilderness",
        "snow-covered hills",
    ],
    "coast": [
        "beach",
        "sandy coastline",
        "seaside shore",
        "rocky coast",
        "tropical beach",
        "ocean shoreline",
        "seashore",
    ],
    "town": [
        "small town",
        "village",
        "medieval village",
        "cobblestone town",
        "little hamlet",
        "quiet town square",
        "market town",
    ],
    "cave": [
        "cave",
        "underground cavern",
        "dark grotto",
        "crystal cave",
        "deep mine tunnels",
        "subterranean cavern",
        "rocky cave system",
    ],
}
ADJECTIVES = [
    "",
    "a",
    "a peaceful",
    "a quiet",
    "an endless",
    "a mysterious",
    "a vast",
    "a cozy",
    "a lonely",
    "a beautiful",
]
WEATHER_WORLD = {
    "clear": ["", "under a clear sky", "on a sunny day", "in fine weather", "with blue skies"],
    "rain": [
        "in the rain",
        "during a rainstorm",
        "under pouring rain",
        "in a drizzle",
        "while it rains",
    ],
    "snow": [
        "in falling snow",
        "during a snowstorm",
        "while it snows",
        "in a blizzard",
        "under drifting snowflakes",
    ],
    "fog": [
        "in thick fog",
        "shrouded in mist",
        "in a heavy haze",
        "on a foggy day",
        "wrapped in fog",
    ],
}
TIME_WORLD = {
    "day": ["", "during the day", "at noon", "in bright daylight", "in the morning"],
    "dusk": [
        "at dusk",
        "at sunset",
        "in the evening twilight",
        "as the sun sets",
        "in the golden evening",
    ],
    "night": [
        "at night",
        "under the stars",
        "at midnight",
        "in the dark of night",
        "on a moonlit night",
    ],
}
CREATURE_NOUNS = {
    "fox": ["fox", "red fox", "foxes"],
    "deer": ["deer", "stag", "doe"],
    "rabbit": ["rabbit", "bunny", "hare"],
    "wolf": ["wolf", "grey wolf", "wolves"],
    "bird": ["bird", "crow", "raven"],
}
CREATURE_WORLD = [
    "with a {c} wandering around",
    "where a {c} roams",
    "home to a {c}",
    "with a {c} nearby",
]

WEATHER_EVENTS = {
    "clear": [
        "the sky clears",
        "the rain stops",
        "the sun comes out",
        "the weather clears up",
        "the storm passes",
        "the fog lifts",
        "the clouds part",
    ],
    "rain": [
        "it starts to rain",
        "rain begins to fall",
        "a downpour begins",
        "heavy rain rolls in",
        "the sky opens up and it pours",
        "it begins drizzling",
        "a rainstorm starts",
    ],
    "snow": [
        "it starts to snow",
        "snowflakes begin to fall",
        "a blizzard sweeps in",
        "snow starts falling",
        "it begins snowing heavily",
        "a snowstorm hits",
    ],
    "fog": [
        "fog rolls in",
        "a thick mist descends",
        "the air grows hazy with fog",
        "mist covers everything",
        "a dense fog settles",
        "it gets foggy",
    ],
}
TIME_EVENTS = {
    "day": [
        "the sun rises",
        "morning comes",
        "it becomes day",
        "dawn breaks",
        "daylight returns",
        "the day begins",
    ],
    "dusk": [
        "the sun begins to set",
        "evening comes",
        "dusk settles in",
        "twilight falls",
        "the sky turns orange as the sun sets",
        "it is getting late in the evening",
    ],
    "night": [
        "night falls",
        "it gets dark",
        "the sun goes down and night arrives",
        "darkness falls",
        "the stars come out",
        "it becomes night",
    ],
}
CREATURE_EVENTS = [
    "a {c} runs past",
    "a {c} appears",
    "you see a {c} nearby",
    "a wild {c} wanders in",
    "suddenly a {c} shows up",
    "a {c} comes out",
]
FEATURE_EVENTS = {
    "pond": [
        "a pond appears",
        "water bubbles up from the ground",
        "a small lake forms nearby",
        "a spring of water emerges",
    ],
    "flowers": [
        "flowers bloom all around",
        "wildflowers sprout",
        "the ground blossoms",
        "colourful flowers grow nearby",
    ],
    "rocks": [
        "boulders tumble down",
        "rocks rise from the ground",
        "a pile of stones appears",
        "a rockslide blocks the way",
    ],
}
JOINERS = [" and ", ", then ", ", and ", " while "]
NON_EVENTS = [
    "hello there",
    "what is this place",
    "who are you",
    "lol",
    "I like turtles",
    "how do I win",
    "tell me a story",
    "asdf",
    "the quick brown fox jumps",
    "ok",
    "can you hear me",
    "nothing happens",
    "I am bored",
    "what time is it",
    "let's go",
    "thanks",
    "where am I",
    "play some music",
    "zzz",
    "help",
]


def _pick(rng, options):
    return options[rng.integers(len(options))]


def world_prompt(rng: np.random.Generator) -> tuple[str, dict]:
    """A random world description and its labels (biome, weather, time, creature or -1)."""
    biome = int(rng.integers(len(ws.BIOMES)))
    weather = int(rng.integers(len(ws.WEATHERS))) if rng.random() < 0.6 else 0
    time = int(rng.integers(len(ws.TIMES))) if rng.random() < 0.6 else 0
    creature = int(rng.integers(len(ws.CREATURES))) if rng.random() < 0.35 else -1
    noun = _pick(rng, BIOME_NOUNS[ws.BIOMES[biome]])
    parts = [f"{_pick(rng, ADJECTIVES)} {noun}".strip()]
    extras = [
        _pick(rng, WEATHER_WORLD[ws.WEATHERS[weather]]),
        _pick(rng, TIME_WORLD[ws.TIMES[time]]),
    ]
    if creature >= 0:
        c = _pick(rng, CREATURE_NOUNS[ws.CREATURES[creature]])
        extras.append(_pick(rng, CREATURE_WORLD).format(c=c))
    rng.shuffle(extras)
    text = " ".join([*parts, *[e for e in extras if e]])
    return text, {"biome": biome, "weather": weather, "time": time, "creature": creature}


def _single_event(rng) -> tuple[str, str, int]:
    kind = _pick(rng, ["weather", "time", "creature", "feature"])
    if kind == "weather":
        w = int(rng.integers(len(ws.WEATHERS)))
        return _pick(rng, WEATHER_EVENTS[ws.WEATHERS[w]]), kind, w
    if kind == "time":
        t = int(rng.integers(len(ws.TIMES)))
        return _pick(rng, TIME_EVENTS[ws.TIMES[t]]), kind, t
    if kind == "creature":
        c = int(rng.integers(len(ws.CREATURES)))
        noun = _pick(rng, CREATURE_NOUNS[ws.CREATURES[c]])
        return _pick(rng, CREATURE_EVENTS).format(c=noun), kind, c
    f = int(rng.integers(len(ws.FEATURES)))
    return _pick(rng, FEATURE_EVENTS[ws.FEATURES[f]]), kind, f


def event_text(rng: np.random.Generator) -> tuple[str, dict]:
    """A random event phrase (one or two events, or none) and its labels per head."""
    labels = {"weather": -1, "time": -1, "creature": -1, "feature": -1}
    if rng.random() < 0.1:
        return _pick(rng, NON_EVENTS), labels
    texts = []
    for _ in range(1 if rng.random() < 0.7 else 2):
        text, kind, value = _single_event(rng)
        if labels[kind] == -1:
            labels[kind] = value
            texts.append(text)
    joined = texts[0] if len(texts) == 1 else _pick(rng, JOINERS).join(texts)
    return joined, labels


def event_for(rng: np.random.Generator, kind: str, value: int) -> str:
    """A phrasing of one given event (evaluation)."""
    if kind == "weather":
        return _pick(rng, WEATHER_EVENTS[ws.WEATHERS[value]])
    if kind == "time":
        return _pick(rng, TIME_EVENTS[ws.TIMES[value]])
    if kind == "creature":
        return _pick(rng, CREATURE_EVENTS).format(c=_pick(rng, CREATURE_NOUNS[ws.CREATURES[value]]))
    return _pick(rng, FEATURE_EVENTS[ws.FEATURES[value]])
