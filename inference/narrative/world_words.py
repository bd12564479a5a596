"""The words for a world's live state, and the events that change it.

Every world change goes through an event text from `EVENTS`: spec's one canonical phrase per
event, which the world model is trained to recognise as exactly that change
(tests/inference/narrative/test_engine.py checks them all), so a pick or a granted request
visibly changes the world.

Every table keyed by a biome, atmosphere or time of day covers all of spec's names, and every
lookup has a fallback, so a world in a state no table knows still gets a line. Django-free.
"""

from __future__ import annotations

from inference.world import spec

Event = tuple[str, str]
# The kinds of event a world's description tells: the first three name a key of
# WorldEngine.describe, a thing is added to its "things". A process (a fire) runs over the
# tiles afterwards and no description tells it, so a story is never grounded to one.
TOLD_KINDS = ("weather", "time", "creature", "thing")
# (kind, value) -> event text, the only text sent to the engine.
EVENTS: dict[Event, str] = {
    (kind, value): text
    for kind, phrases in spec.EVENT_PHRASES.items()
    if kind in TOLD_KINDS
    for value, text in phrases.items()
}
# How a story tells that an event happened, where its event text is an order ("build a
# campfire") rather than a clause that reads after "and" ("night falls").
TOLD: dict[Event, str] = {
    ("thing", "campfire"): "a campfire crackles to life",
    ("thing", "house"): "a house now stands",
    ("thing", "bridge"): "a bridge spans the water",
    ("thing", "path"): "a path opens ahead",
    ("thing", "trees"): "trees grow tall",
    ("thing", "flowers"): "flowers bloom all around",
    ("thing", "tent"): "a tent stands ready",
    ("thing", "fence"): "a fence rises",
}


PLACES = {
    "meadow": "meadow",
    "forest": "woods",
    "desert": "dunes",
    "snow": "snowfield",
    "beach": "shore",
    "city": "streets",
    "cave": "cavern",
    "reef": "reef",
    "volcanic": "lava fields",
    "jungle": "jungle",
    "swamp": "marsh",
    "ruins": "old ruins",
    "canyon": "canyon",
    "blossom": "blossom garden",
    "ice_cave": "ice cavern",
    "autumn": "autumn woods",
}
# Places one is "on" rather than "in" (the preposition `_in_place` uses).
ON_PLACES = frozenset({"shore", "snowfield", "reef", "lava fields", "land"})
# What stands in the place when the story names nothing itself.
LANDMARKS = {
    "meadow": "old stone wall",
    "forest": "hollow oak",
    "desert": "ruined well",
    "snow": "frozen cairn",
    "beach": "wrecked boat",
    "city": "fountain",
    "cave": "glowing pool",
    "reef": "sunken anchor",
    "volcanic": "black obsidian spire",
    "jungle": "vine-choked idol",
    "swamp": "crooked willow",
    "ruins": "broken archway",
    "canyon": "red rock arch",
    "blossom": "stone lantern",
    "ice_cave": "frozen waterfall",
    "autumn": "fallen log",
}
# The atmosphere as a noun: what "Wait for the {weather} to pass" and prompts call it.
WEATHER_WORDS = {
    "clear": "clear sky",
    "rain": "rain",
    "snow": "snow",
    "fog": "fog",
    "thunderstorm": "thunderstorm",
    "sandstorm": "sandstorm",
    "ash": "ashfall",
    "petals": "falling petals",
    "fireflies": "fireflies",
}
TIME_WORDS = {"dawn": "dawn", "day": "daylight", "dusk": "dusk", "night": "night"}
TIME_PHRASES = {"dawn": "at dawn", "day": "by day", "dusk": "at dusk", "night": "at night"}
# Things a world holds, with their article, as a line about the world names them.
THING_WORDS = {
    "campfire": "a campfire",
    "house": "a house",
    "bridge": "a bridge",
    "path": "a path",
    "trees": "trees",
    "lava_pool": "a pool of lava",
    "ruins": "ruins",
    "statue": "a statue",
    "pond": "a pond",
    "flowers": "flowers",
    "rocks": "rocks",
    "tent": "a tent",
    "well": "a well",
    "fence": "a fence",
}


# What lies on the ground round the players as the world evolves (`WorldEngine.describe`'s
# "covers"), as a story says it.
COVER_WORDS = {
    "fire": "a fire burning",
    "ash": "burnt ground",
    "puddle": "puddles",
    "snow": "settled snow",
}


def describe_place(world: dict) -> str:
    return PLACES.get(world.get("biome", ""), "land")


def in_place(world: dict) -> str:
    place = describe_place(world)
    return f"on the {place}" if place in ON_PLACES else f"in the {place}"


def time_of(world: dict) -> str:
    """The named time of day: the description's own, else what its clock is called."""
    if world.get("time") in spec.TIMES:
        return world["time"]
    hours, _, minutes = str(world.get("clock", "")).partition(":")
    if hours.isdigit() and minutes.isdigit():
        return spec.time_name(int(hours) * 60 + int(minutes))
    return "day"


def told(event: Event) -> str:
    """The event as a story tells it happened ("night falls", "a campfire crackles to life")."""
    return TOLD.get(event) or EVENTS.get(event, "")


def changes_nothing(event: Event, world: dict) -> bool:
    """Asking for the weather or time the world already has changes nothing; a creature or a
    thing always adds one more."""
    kind, value = event
    if kind == "time":
        return time_of(world) == value
    return kind == "weather" and world.get("weather") == value


def apply_to_description(world: dict, event: Event) -> dict:
    """The description a world will have once `event` is applied."""
    kind, value = event
    out = {**world, "creatures": list(world.get("creatures", []))}
    if kind == "creature":
        out["creatures"].append(value)
    elif kind == "thing":
        out["things"] = [*world.get("things", []), value]
    elif kind == "weather":
        out["weather"] = value
    elif kind == "time":
        out["time"] = value
        if "clock" in world and value in spec.TIMES:  # a named time sets the clock to its moment
            out["clock"] = spec.clock_text(spec.TIME_MINUTES[spec.TIMES.index(value)])
    return out
