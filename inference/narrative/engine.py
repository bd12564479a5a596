"""Story picks and character dialogue, composed from the live world and the story so far.

No generative language model runs offline, only the all-MiniLM-L6-v2 encoder
(`inference.world.text`). So text comes from a grammar of story beats and reply templates whose
slots are filled from the
world's live state (`WorldEngine.describe`) and the story so far; the encoder ranks candidate
beats by coherence with the story (and keeps the two options apart), and sorts a player's line
into an intent by its nearest exemplar.

Every world change goes through an event text from `EVENTS`: spec's one canonical phrase per
event, which the world model is trained to recognise as exactly that change
(tests/inference/narrative/test_engine.py checks them all), so a pick or a granted request
visibly changes the world.

Every table keyed by a biome, atmosphere or time of day covers all of spec's names, and every
lookup has a fallback, so a world in a state no table knows still gets a line.

Pure functions over small frozen dataclasses: the worker replaces a session's state wholesale, so
a snapshot taken on another thread never sees half an update. Django-free.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, replace

import numpy as np

from inference.narrative.examples import MAX_EXAMPLES, default_greeting
from inference.world import spec as ws
from inference.world import text as text_encoder

STORY_LINES_SHOWN = 12  # story so far sent with each pair of options
MAX_LINE_CHARS = 240
STORY_RECENT_LINES = 4  # lines a prompt quotes whole; older ones live on in the summary
SUMMARY_CHARS = 400  # the rolling summary keeps its most recent sentences within this
RECENT_PICKS = 10  # labels of picks remembered, so new options do not repeat them
CHAT_RECENT_TURNS = 4  # (speaker, text) lines of dialogue still quoted whole after a fold
# The memory grows to this many lines (or characters) before all but the last CHAT_RECENT_TURNS
# fold into the summary at once: between folds a prompt only grows at its end, so its model
# reads only the new exchange (decoding.py keeps a session's cells), not the summary and the
# memory again every turn. A fold has the model read the summary and the lines kept again (and
# the creator's lines too, when the card's world line moved on): every 7th exchange here, every
# 4th with 12 lines and 6 kept (bench/narrative.py's long talk: 47 tokens read a turn, not 138).
CHAT_MAX_TURNS = 16
CHAT_MEMORY_CHARS = 1600  # with a long card, about what a sequence of 1024 tokens holds
WORLD_NOTE = ""  # the speaker of a memory's note that the world changed (no name is empty)

# --- world events: text the event heads recognise, and what each does ----------------------
Event = tuple[str, str]
# (kind, value) -> event text, the only text sent to the engine. kind is "weather", "time",
# "creature" or "thing"; the first three name a key of WorldEngine.describe, a thing is added to
# its "things".
EVENTS: dict[Event, str] = {
    (kind, value): text
    for kind, phrases in ws.EVENT_PHRASES.items()
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
# Snapshots written before v2 name things "feature"s.
_LEGACY_KINDS = {"feature": "thing"}

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
# Concrete nouns a story may be about; the ones it mentioned last fill the options' {motif}.
MOTIFS = (
    "lighthouse boat boats ship harbour letter map caravan tracks campfire queen envoy castle "
    "tower bridge shrine door key mushrooms lantern bell well road path river cave crown sword "
    "book stranger wagon cart garden statue gate ruins market tent fence house pond fountain "
    "anchor idol"
).split()
MOTIFS_RECENT = 3


class ChoiceError(ValueError):
    """A pick for options that are not (or no longer) on offer."""


def describe_place(world: dict) -> str:
    return PLACES.get(world.get("biome", ""), "land")


def _in_place(world: dict) -> str:
    place = describe_place(world)
    return f"on the {place}" if place in ON_PLACES else f"in the {place}"


def time_of(world: dict) -> str:
    """The named time of day: the description's own, else what its clock is called."""
    if world.get("time") in ws.TIMES:
        return world["time"]
    hours, _, minutes = str(world.get("clock", "")).partition(":")
    if hours.isdigit() and minutes.isdigit():
        return ws.time_name(int(hours) * 60 + int(minutes))
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
        if "clock" in world and value in ws.TIMES:  # a named time sets the clock to its moment
            out["clock"] = ws.clock_text(ws.TIME_MINUTES[ws.TIMES.index(value)])
    return out


# --- story -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Beat:
    """One kind of story step: which event it causes, and how it reads before and after."""

    name: str
    event: Event  # (kind, value); value "*" = a creature kind chosen at fill time
    label: str  # the option the player sees
    narration: str  # the line the story gains when it is picked
    excludes: frozenset[str] = frozenset()  # creatures a "*" beat does not fit


_TRACKLESS = frozenset({"bird", "fish", "butterfly", "ghost"})  # nothing to follow on the ground

BEATS = (
    Beat("shelter", ("weather", "rain"), "Hurry to the {motif} before the rain",
         "Clouds gather over the {place}; you run for the {motif} as it starts to rain."),
    Beat("storm_walk", ("weather", "rain"), "Walk on into the coming rain",
         "You walk on, and rain begins to drum on the {place}."),
    Beat("snowfall", ("weather", "snow"), "Wait for the first snow by the {motif}",
         "You wait by the {motif}; the air chills and it starts to snow."),
    Beat("fog", ("weather", "fog"), "Slip away into the mist",
         "Fog rolls in over the {place}, and you slip away unseen."),
    Beat("fog_search", ("weather", "fog"), "Search for the {motif} as the fog comes",
         "You search for the {motif} while a thick fog settles on the {place}."),
    Beat("clearing", ("weather", "clear"), "Wait for the {weather} to pass",
         "You wait it out; at last the sky clears above the {place}, the {weather} gone."),
    Beat("thunder", ("weather", "thunderstorm"), "Climb the {motif} to watch the storm",
         "From the {motif} you watch lightning split the sky as a thunderstorm rolls in."),
    Beat("sandstorm", ("weather", "sandstorm"), "Wait out the sandstorm by the {motif}",
         "You crouch by the {motif} with your eyes shut as a sandstorm sweeps in."),
    Beat("ashfall", ("weather", "ash"), "Watch the smoke rise beyond the {motif}",
         "Smoke darkens the sky over the {place}, and ash falls like grey snow."),
    Beat("petals", ("weather", "petals"), "Shake the blossoms loose",
         "You shake the branches, and petals drift on the wind across the {place}."),
    Beat("fireflies", ("weather", "fireflies"), "Follow the fireflies",
         "You follow a faint glow until fireflies light up the air around the {motif}."),
    Beat("dawn", ("time", "dawn"), "Rest until morning",
         "You rest by the {motif} until dawn breaks over the {place}."),
    Beat("noon", ("time", "day"), "Press on until the sun is high",
         "You press on across the {place} until the sun rises high above you."),
    Beat("dusk", ("time", "dusk"), "Follow the road until the sun sets",
         "You follow the road across the {place} as the sun begins to set."),
    Beat("night_watch", ("time", "night"), "Keep watch over the {motif} until dark",
         "You keep watch over the {motif}, and night falls on the {place}."),
    Beat("night_sneak", ("time", "night"), "Wait for nightfall to move unseen",
         "You wait in the shadows of the {place} until night falls."),
    Beat("tracks", ("creature", "*"), "Follow the {creature} tracks",
         "You follow the tracks through the {place}, and a {creature} appears ahead.",
         _TRACKLESS),
    Beat("call", ("creature", "*"), "Call out across the {place}",
         "Your call echoes over the {place}; a {creature} appears to answer it."),
    Beat("bait", ("creature", "*"), "Leave food by the {motif} and wait",
         "You leave food by the {motif} and wait; soon a {creature} appears.",
         frozenset({"ghost"})),
    Beat("campfire", ("thing", "campfire"), "Light a campfire against the dark",
         "You gather sticks by the {motif} and light a campfire; it crackles to life."),
    Beat("house", ("thing", "house"), "Build a cabin by the {motif}",
         "You saw and hammer by the {motif} until a snug house stands there."),
    Beat("bridge", ("thing", "bridge"), "Cross the river by a new bridge",
         "You lash planks together, and a bridge spans the water."),
    Beat("path", ("thing", "path"), "Clear a path through the {place}",
         "You push the brush aside, and a path opens ahead of you."),
    Beat("grove", ("thing", "trees"), "Plant saplings by the {motif}",
         "You plant saplings by the {motif}, and trees grow tall around it."),
    Beat("lava", ("thing", "lava_pool"), "Dig down toward the heat below",
         "The ground splits where you dig, and a pool of lava bubbles up."),
    Beat("ruins", ("thing", "ruins"), "Shelter in the ruins",
         "You search for cover, and ancient ruins rise from the ground to shelter you."),
    Beat("statue", ("thing", "statue"), "Carve the stone by the {motif}",
         "You chip at the stone until a statue stands by the {motif}."),
    Beat("spring", ("thing", "pond"), "Dig where the ground is damp",
         "You dig near the {motif}, and water wells up until a pond appears."),
    Beat("bloom", ("thing", "flowers"), "Scatter the seeds you carry",
         "You scatter your seeds across the {place}, and flowers bloom all around."),
    Beat("rockfall", ("thing", "rocks"), "Climb the slope above the {motif}",
         "You climb above the {motif}; loose stones slide and rocks tumble down."),
    Beat("camp", ("thing", "tent"), "Pitch a tent and make camp",
         "You pitch a tent beside the {motif} and settle in."),
    Beat("well", ("thing", "well"), "Dig a well by the {motif}",
         "You dig by the {motif} and line the hole with stones until a well stands ready."),
    Beat("fence", ("thing", "fence"), "Build a fence around the camp",
         "You drive stakes into the ground, and a fence rises around your camp."),
)  # fmt: skip
BEAT_BY_NAME = {b.name: b for b in BEATS}


@dataclass(frozen=True)
class Option:
    beat: str
    label: str
    narration: str
    event: Event

    @property
    def event_text(self) -> str:
        return EVENTS[self.event]


@dataclass(frozen=True)
class Story:
    """A story world's narrative state: everything failover needs lives in `to_meta()`."""

    lines: tuple[str, ...]  # the story so far: the opening, then one line per pick
    picks: tuple[str, ...] = ()  # beat names picked, oldest first
    offered: tuple[str, ...] = ()  # beat names of the last pair, picked or not
    index: int = 0  # pairs offered so far; the current pair is "c<index>"
    options: tuple[Option, ...] = ()  # the pair on offer, empty between a pick and the next
    summary: str = ""  # rolling summary of the lines older than the recent ones
    labels: tuple[str, ...] = ()  # labels of the last RECENT_PICKS picks, oldest first
    chosen: tuple[str, ...] = ()  # the option picked before each line after the opening

    @property
    def recent_lines(self) -> tuple[str, ...]:
        """The opening and the last lines, which prompts quote whole."""
        return self.lines[:1] + self.lines[1:][-STORY_RECENT_LINES:]

    @property
    def choice_id(self) -> str:
        return f"c{self.index}" if self.options else ""

    def to_meta(self) -> dict:
        options = [[o.beat, o.label, o.narration, *o.event] for o in self.options]
        return {
            "kind": "story",
            "lines": list(self.lines),
            "picks": list(self.picks),
            "offered": list(self.offered),
            "index": self.index,
            "options": options,
            "summary": self.summary,
            "labels": list(self.labels),
            "chosen": list(self.chosen),
        }


def story_start(opening: str, world: dict) -> Story:
    first = _clean(opening)
    if not first:
        when = TIME_PHRASES.get(time_of(world), "")
        first = _clean(f"You arrive {_in_place(world)} {when}") + "."
    return Story(lines=(first,))


def story_offer(story: Story, world: dict, seed: int) -> Story:
    """The next pair of options: deterministic for (seed, pair index, story so far)."""
    index = story.index + 1
    rng = np.random.default_rng([seed & 0x7FFFFFFF, index, zlib.crc32(_story_text(story).encode())])
    candidates = _candidates(story, world, rng)
    texts = [f"{c.label}. {c.narration}" for c in candidates]
    vecs = text_encoder.embed([_story_text(story, recent=3), *texts])
    context, cand = vecs[0], vecs[1:]
    coherence = np.round(cand @ context, 4)
    picked, passed = set(story.picks[-2:]), set(story.offered) - set(story.picks[-1:])
    score = coherence + rng.uniform(0, 0.05, len(candidates))  # variety between equal fits
    # Fresh turns: not what was just done, nor at once again what was just passed over.
    score -= np.array([0.3 * (c.beat in picked) + 0.15 * (c.beat in passed) for c in candidates])
    first = int(np.argmax(score))
    # Maximal marginal relevance: the second option fits the story but differs from the first.
    overlap = np.round(cand @ cand[first], 4)
    second_score = score - 0.7 * overlap
    for i, c in enumerate(candidates):
        if i == first or c.event[0] == candidates[first].event[0]:
            second_score[i] = -np.inf
    second = int(np.argmax(second_score))
    return replace(story, index=index, options=(candidates[first], candidates[second]))


def story_pick(story: Story, choice_id: str, option: int) -> tuple[Story, Option]:
    """The story with the pick's line added and no options on offer, and the picked option."""
    if not story.options or choice_id != story.choice_id:
        raise ChoiceError("That choice is no longer on offer.")
    if option not in (0, 1):
        raise ChoiceError("option must be 0 or 1.")
    picked = story.options[option]
    after = replace(
        story,
        picks=(*story.picks, picked.beat),
        offered=tuple(o.beat for o in story.options),
        options=(),
        labels=(*story.labels, picked.label)[-RECENT_PICKS:],
    )
    # A generated option is narrated after the pick (narrator.py); a grammar beat carries its own.
    if picked.narration:
        return story_narrated(after, picked.narration, picked.label), picked
    return after, picked


def story_narrated(story: Story, line: str, chosen: str = "") -> Story:
    """The story with one more line, told after the option `chosen`; the line that leaves the
    recent window joins the summary."""
    lines = (*story.lines, _clip(_clean(line), MAX_LINE_CHARS))
    summary = story.summary
    if len(lines) > 1 + STORY_RECENT_LINES:
        summary = rolling_summary(summary, lines[-STORY_RECENT_LINES - 1])
    return replace(story, lines=lines, summary=summary, chosen=(*story.chosen, chosen))


def rolling_summary(summary: str, line: str, limit: int = SUMMARY_CHARS) -> str:
    """The summary with a line folded in, dropping its oldest sentences beyond `limit`."""
    text = _clean(f"{summary} {line}")
    while len(text) > limit:
        parts = re.split(r"(?<=[.!?])\s+", text, maxsplit=1)
        if len(parts) < 2:
            return _clip(text[-limit:], limit)
        text = parts[1]
    return text


def choices_message(story: Story) -> dict:
    """The pair on offer and the last lines of the story, each with the option picked before it
    ("" for the opening)."""
    return {
        "choice_id": story.choice_id,
        "options": [o.label for o in story.options],
        "story": list(story.lines[-STORY_LINES_SHOWN:]),
        "chosen": list(("", *story.chosen)[-STORY_LINES_SHOWN:]),
    }


def _candidates(story: Story, world: dict, rng: np.random.Generator) -> list[Option]:
    slots = {
        "place": describe_place(world),
        "weather": WEATHER_WORDS.get(world.get("weather", ""), "weather"),
    }
    motifs = _motifs(story, world)
    present = list(world.get("creatures") or [])
    out = []
    for beat in BEATS:
        kind, value = beat.event
        if changes_nothing(beat.event, world):
            continue  # it is raining already: "it starts to rain" would change nothing
        if value == "*":
            # Prefer a kind the story has not met yet; a deterministic draw among them.
            fitting = [c for c in ws.CREATURES if c not in beat.excludes]
            fresh = [c for c in fitting if c not in present] or fitting
            value = fresh[int(rng.integers(len(fresh)))]
        motif = motifs[int(rng.integers(len(motifs)))]
        filled = {**slots, "creature": value, "motif": motif}
        out.append(
            Option(
                beat=beat.name,
                label=beat.label.format(**filled),
                narration=beat.narration.format(**filled),
                event=(kind, value),
            )
        )
    return out


def _motifs(story: Story, world: dict) -> list[str]:
    """The concrete things the story mentioned last (most recent first), or the place's own
    landmark when it names none."""
    found: list[str] = []
    for line in reversed(story.lines):
        for word in reversed(re.findall(r"[a-z]+", line.lower())):
            if word in MOTIFS and word not in found:
                found.append(word)
    return found[:MOTIFS_RECENT] or [LANDMARKS.get(world.get("biome", ""), "old path")]


def _story_text(story: Story, recent: int | None = None) -> str:
    lines = story.lines if recent is None else story.lines[:1] + story.lines[1:][-recent:]
    return " ".join(lines)


# --- character dialogue ------------------------------------------------------------------------

INTENTS: dict[str, tuple[str, ...]] = {
    "greeting": ("hello", "hi there", "good morning", "hey, nice to meet you", "greetings"),
    "identity": ("who are you?", "what is your name?", "tell me about yourself",
                 "what do you do here?", "what are you?"),
    "place": ("where are we?", "what is this place?", "where am I?", "describe this place",
              "what's around here?"),
    "weather": ("what's the weather like?", "is it raining?", "how is the weather today?",
                "will it snow?", "why is it so foggy?"),
    "time": ("what time is it?", "is it night already?", "how late is it?", "is it morning?"),
    "creatures": ("are there any animals here?", "what creatures live here?",
                  "did you see that fox?", "is it dangerous around here?", "any wolves nearby?"),
    "wellbeing": ("how are you?", "how are you doing?", "are you okay?", "how do you feel?"),
    "farewell": ("goodbye", "see you later", "bye", "I have to go now", "farewell"),
    "thanks": ("thank you", "thanks a lot", "much appreciated"),
    "change": ("can you make it rain?", "make it snow please", "please make it night",
               "could you summon a fox?", "make some flowers grow", "change the weather",
               "can you bring out the sun?", "call a wolf here", "could you build a bridge?",
               "light a campfire for me"),
}  # fmt: skip
INTENT_MIN_SIMILARITY = 0.45  # below it a line is "unknown"
# (kind, value) -> how a player asks for it; the nearest phrase to a "change" line is granted.
REQUESTS: dict[Event, tuple[str, ...]] = {
    ("weather", "clear"): ("make the sky clear", "make the sun come out", "stop the rain"),
    ("weather", "rain"): ("make it rain", "bring the rain"),
    ("weather", "snow"): ("make it snow", "bring the snow"),
    ("weather", "fog"): ("make it foggy", "bring the fog"),
    ("weather", "thunderstorm"): ("make a thunderstorm", "bring thunder and lightning"),
    ("weather", "sandstorm"): ("make a sandstorm", "stir up a sandstorm"),
    ("weather", "ash"): ("make ash fall from the sky", "make it rain ash"),
    ("weather", "petals"): ("make petals fall", "bring petals on the wind"),
    ("weather", "fireflies"): ("bring the fireflies", "make the fireflies glow"),
    ("time", "dawn"): ("make it dawn", "make it morning", "bring the sunrise", "make the sun rise"),
    ("time", "day"): ("make it day", "make it noon", "make it daytime"),
    ("time", "dusk"): (
        "make it evening",
        "make it dusk",
        "make the sun set",
        "make the sun go down",
    ),
    ("time", "night"): ("make it night", "make it dark"),
    **{("creature", c): (f"bring a {c} here", f"summon a {c}") for c in ws.CREATURES},
    ("thing", "campfire"): ("light a campfire", "make a fire"),
    ("thing", "house"): ("build a house", "make a house appear"),
    ("thing", "bridge"): ("build a bridge", "make a bridge"),
    ("thing", "path"): ("make a path", "clear a path"),
    ("thing", "trees"): ("make trees grow", "plant some trees"),
    ("thing", "lava_pool"): ("make a pool of lava", "make lava bubble up"),
    ("thing", "ruins"): ("raise some ancient ruins", "make ruins appear"),
    ("thing", "statue"): ("make a statue", "put up a statue"),
    ("thing", "pond"): ("make a pond", "make water spring up"),
    ("thing", "flowers"): ("make flowers grow", "make flowers bloom"),
    ("thing", "rocks"): ("make rocks rise", "make boulders appear"),
    ("thing", "tent"): ("pitch a tent", "put up a tent"),
    ("thing", "well"): ("dig a well", "make a well"),
    ("thing", "fence"): ("build a fence", "put up a fence"),
}
REQUEST_MIN_SIMILARITY = 0.5
# A line that asks for something ("make it rain", "could you bring a fox") rather than asks
# about it ("is it raining?"): with a close request phrase it is a change, whatever the nearest
# exemplar says.
REQUEST_CUE = re.compile(
    r"\b(make|bring|summon|call|conjure|let|stop|build|light|pitch|plant|dig|raise|put up|"
    r"could you|can you|would you|please)\b",
    re.I,
)

# Tone from the persona card, by its nearest description; each tone opens (a whole sentence, so
# the template's own sentence starts with a capital) and closes lines.
# name -> (what such a persona says of itself, openers, how plain statements end)
TONES = {
    "warm": ("cheerful, kind, friendly and curious", ("Oh!", "Ah.", "Well now."), "!"),
    # "stern, strict": a stern librarian read as warm and said "I'm Sister Ysolde, friend."
    "gruff": ("gruff, grumpy, stern, strict, slow to trust", ("Hmph.", "Bah.", "Hm."), "."),
    "grand": ("boastful, proud, loves to exaggerate tall tales", ("Ha!", "Ahoy!", "Hah!"), "!"),
    "sly": ("mischievous, playful, speaks in riddles", ("Heh.", "Hmm...", "Ooh."), "..."),
}

REPLIES: dict[str, tuple[str, ...]] = {
    "greeting": ("{open} Hello to you too, traveller.", "{open} Welcome to the {place}."),
    # The persona inside a sentence of the character's own, never the card's sentence alone
    # ("Name's Old Tom. A gruff marsh ferryman." read as a recital of the card).
    "identity": ("{open} I'm {name}, {persona}", "{open} Name's {name}, {persona}"),
    "place": ("{open} We're {in_place}, {time_phrase}, with {weather_phrase}.",
              "{open} You're {in_place}. {creature_phrase}"),
    "weather": ("{open} {weather_sentence}", "{open} Look up: {weather_phrase}."),
    "time": ("{open} It's {time_word} here {in_place}{clock_note}.", "{open} {time_sentence}"),
    "creatures": ("{open} {creature_phrase}", "{open} Keep your eyes open. {creature_phrase}"),
    "wellbeing": ("{open} I'm well enough, with {weather_phrase} over the {place}.",
                  "{open} Better now that I've company."),
    "farewell": ("{open} Safe roads, traveller.", "{open} Off you go, then. Come back soon."),
    "thanks": ("{open} Don't mention it.", "{open} Any time."),
    "change_done": ("{open} As you wish: {event_text}.", "{open} Watch closely... {event_told}."),
    "change_moot": ("{open} Look around: {state_phrase} already.",),
    "change_no": ("{open} That is beyond even me.", "{open} I can't change that, friend."),
    "unknown": ("{open} I don't follow. Ask me about the {place}, or about me.",
                "{open} Say that another way?"),
}  # fmt: skip
# What a character says of the live world, by atmosphere and time of day.
WEATHER_PHRASES = {
    "clear": "clear skies",
    "rain": "rain coming down",
    "snow": "snow falling",
    "fog": "fog all around",
    "thunderstorm": "thunder rolling",
    "sandstorm": "sand on the wind",
    "ash": "ash falling",
    "petals": "petals on the wind",
    "fireflies": "fireflies glowing",
}
WEATHER_SENTENCES = {  # {place} is filled in
    "clear": "Not a cloud over the {place}.",
    "rain": "It's raining; mind the mud.",
    "snow": "Snow, and more on the way.",
    "fog": "Fog so thick you could lose your boots in it.",
    "thunderstorm": "Thunder and lightning; keep your head down.",
    "sandstorm": "Sand in the air; cover your eyes.",
    "ash": "Ash drifting down like grey snow.",
    "petals": "Petals on the wind, soft as anything.",
    "fireflies": "Fireflies everywhere, like little lanterns.",
}
TIME_SENTENCES = {
    "dawn": "First light; the day's only beginning.",
    "day": "The sun's up; plenty of day left.",
    "dusk": "The sun's going down; dusk already.",
    "night": "It's dark. Night has the place now.",
}
MAX_REPLY_CHARS = 200


@dataclass(frozen=True)
class Character:
    name: str
    persona: str
    greeting: str
    turn: int = 0  # lines answered so far
    greeted: bool = False
    last_intent: str = ""
    examples: tuple[str, ...] = ()  # lines the creator wrote in the character's voice
    memory: tuple[tuple[str, str], ...] = ()  # recent (speaker, text) turns, "you" or the name,
    # and notes of the world changing between them (speaker WORLD_NOTE, the new world line)
    summary: str = ""  # rolling summary of the turns older than `memory`
    world: str = ""  # the world line its card shows: as it was at its first line or last fold

    def to_meta(self) -> dict:
        return {
            "kind": "character",
            "name": self.name,
            "persona": self.persona,
            "greeting": self.greeting,
            "turn": self.turn,
            "greeted": self.greeted,
            "last_intent": self.last_intent,
            "examples": list(self.examples),
            "memory": [list(t) for t in self.memory],
            "summary": self.summary,
            "world": self.world,
        }


def character_remember(character: Character, line: str, reply: str) -> Character:
    """The character with one exchange added to its memory. A memory grown past
    CHAT_MAX_TURNS lines or CHAT_MEMORY_CHARS keeps its last CHAT_RECENT_TURNS and summarises
    the rest, all at once; the world it last noted becomes its world line and the notes go."""
    turns = (*character.memory, ("you", line), (character.name, reply))
    said = tuple(turn for turn in turns if turn[0] != WORLD_NOTE)
    if len(said) <= CHAT_MAX_TURNS and _chars(turns) <= CHAT_MEMORY_CHARS:
        return replace(character, memory=turns)
    world, turns = character_world(character), said
    keep = CHAT_RECENT_TURNS
    while keep > 2 and _chars(turns[-keep:]) > CHAT_MEMORY_CHARS // 2:
        keep -= 2  # long lines: fewer of them stay whole, so the prompt still fits its sequence
    summary = character.summary
    for speaker, text in turns[:-keep]:
        who = "The traveller" if speaker == "you" else speaker
        summary = rolling_summary(summary, f"{who} said: {_clip(text, 120)}")
    return replace(character, memory=turns[-keep:], summary=summary, world=world)


def character_notice(character: Character, world_line: str) -> Character:
    """The character with the world as it is now: its world line if it has none yet, else a note
    in its memory if the world changed since it last saw it. A note costs the next prompt a few
    tokens at its end; a new world line in the card would make the model read all after it
    again: the creator's lines, the summary, the memory."""
    if not character.world:
        return replace(character, world=world_line)
    if world_line == character_world(character):
        return character
    return replace(character, memory=(*character.memory, (WORLD_NOTE, world_line)))


def character_world(character: Character) -> str:
    """The world line the character last saw: its latest note, else its world line."""
    notes = [text for speaker, text in character.memory if speaker == WORLD_NOTE]
    return notes[-1] if notes else character.world


def _chars(turns: tuple[tuple[str, str], ...]) -> int:
    return sum(len(text) for _, text in turns)


@dataclass(frozen=True)
class Reply:
    text: str
    intent: str
    event: Event | None = None  # a world change to apply with the reply

    @property
    def event_text(self) -> str | None:
        return EVENTS[self.event] if self.event else None


def character_start(card: dict) -> Character:
    name = _clean(str(card.get("name") or ""))[:60] or "Stranger"
    persona = _clean(str(card.get("persona") or ""))
    greeting = _clean(str(card.get("greeting") or "")) or default_greeting(name)
    raw = card.get("examples") or ()
    examples = (
        tuple(_clip(_clean(e), MAX_LINE_CHARS) for e in raw if isinstance(e, str) and e.strip())[
            :MAX_EXAMPLES
        ]
        if isinstance(raw, list | tuple)
        else ()
    )
    return Character(name=name, persona=persona, greeting=greeting, examples=examples)


def character_greet(character: Character) -> tuple[Character, str]:
    return replace(character, greeted=True), character.greeting


PLAYER_SPEAKER = "Player"


def character_transcript(character: Character) -> list[tuple[str, str]]:
    """The talk as far as the character remembers it, (speaker, text) in order, for a player
    who joins or comes back: the greeting while no turn has been folded away, then the recent
    turns (a player's line as "Player": the memory keeps no names)."""
    if not character.greeted:
        return []
    head = [] if character.summary else [(character.name, character.greeting)]
    turns = [
        (PLAYER_SPEAKER if speaker == "you" else speaker, text)
        for speaker, text in character.memory
        if speaker != WORLD_NOTE
    ]
    return head + turns


def classify(line: str) -> tuple[str, float]:
    """The intent of a player's line by its nearest exemplar, and that similarity."""
    names = [n for n, exemplars in INTENTS.items() for _ in exemplars]
    vecs = text_encoder.embed([line, *[e for ex in INTENTS.values() for e in ex]])
    sims = vecs[1:] @ vecs[0]
    best = int(np.argmax(sims))
    if sims[best] < INTENT_MIN_SIMILARITY:
        return "unknown", float(sims[best])
    return names[best], float(sims[best])


def requested_event(line: str) -> Event | None:
    keys = [key for key, phrases in REQUESTS.items() for _ in phrases]
    vecs = text_encoder.embed([line, *[p for phrases in REQUESTS.values() for p in phrases]])
    sims = vecs[1:] @ vecs[0]
    best = int(np.argmax(sims))
    return keys[best] if sims[best] >= REQUEST_MIN_SIMILARITY else None


WORLD_INTENTS = ("place", "weather", "time", "creatures")  # what a line may ask of the world


def world_lines(character: Character, world: dict, intent: str, opener: str) -> list[str]:
    """The grammar's answers to a question about the live world (one of WORLD_INTENTS: "where
    are we?", "is it going to rain?") after `opener`: what the frames show."""
    rng = np.random.default_rng([character.turn, zlib.crc32(character.name.encode())])
    slots = _reply_slots(character, world, None, rng) | {"open": opener}
    return [_clip(" ".join(t.format(**slots).split()), MAX_REPLY_CHARS) for t in REPLIES[intent]]


def character_reply(
    character: Character, world: dict, line: str, seed: int
) -> tuple[Character, Reply]:
    """Answer one player line in character; deterministic for (seed, turn, line, world)."""
    line = _clean(line)[:500]
    intent, _ = classify(line) if line else ("unknown", 0.0)
    requested = requested_event(line) if line else None
    if requested is not None and REQUEST_CUE.search(line):
        intent = "change"
    elif intent != "change":
        requested = None
    key = intent
    if intent == "change":
        if requested is None:
            key = "change_no"
        elif changes_nothing(requested, world):
            key = "change_moot"  # already so: nothing to apply
        else:
            key = "change_done"
    rng = np.random.default_rng([seed & 0x7FFFFFFF, character.turn, zlib.crc32(line.encode())])
    slots = _reply_slots(character, world, requested, rng)
    templates = REPLIES[key]
    text = templates[int(rng.integers(len(templates)))].format(**slots)
    text = _clip(" ".join(text.split()), MAX_REPLY_CHARS)
    turned = character_remember(
        replace(character, turn=character.turn + 1, last_intent=intent), line, text
    )
    event = requested if key == "change_done" else None
    return turned, Reply(text=text, intent=intent, event=event)


def _reply_slots(character: Character, world: dict, event: Event | None, rng) -> dict:
    tone = _tone(character.persona)
    _, openers, end = TONES[tone]
    place = describe_place(world)
    weather, time = world.get("weather", "clear"), time_of(world)
    creatures = sorted(set(world.get("creatures") or []))
    persona = _persona_clause(character.persona) or f"and I make my home {_in_place(world)}{end}"
    weather_phrase = WEATHER_PHRASES.get(weather, "the weather as it comes")
    time_word = TIME_WORDS.get(time, "daytime")
    if creatures:
        creature_phrase = f"I've seen {_and([_a(c) for c in creatures])} about{end}"
    else:
        creature_phrase = f"Nothing stirs {_in_place(world)} just now{end}"
    state_phrase = {
        "weather": weather_phrase,
        "time": f"it's {time_word}",
    }.get(event[0] if event else "", weather_phrase)
    clock = world.get("clock")
    return {
        "open": openers[int(rng.integers(len(openers)))],
        "name": character.name,
        "persona": persona,
        "place": place,
        "in_place": _in_place(world),
        "time_word": time_word,
        "time_phrase": TIME_PHRASES.get(time, "now"),
        "clock_note": f", about {clock}" if clock else "",
        "time_sentence": TIME_SENTENCES.get(time, "The light's changing."),
        "weather_phrase": weather_phrase,
        "weather_sentence": WEATHER_SENTENCES.get(weather, "Strange weather today.").format(
            place=place
        ),
        "creature_phrase": creature_phrase,
        "event_text": EVENTS[event] if event else "",
        "event_told": told(event) if event else "",
        "state_phrase": state_phrase,
    }


def _tone(persona: str) -> str:
    if not persona:
        return "warm"
    names = list(TONES)
    vecs = text_encoder.embed([persona, *[TONES[n][0] for n in names]])
    return names[int(np.argmax(vecs[1:] @ vecs[0]))]


def _persona_clause(persona: str) -> str:
    """'A gruff marsh ferryman, slow to trust.' -> 'a gruff marsh ferryman, slow to trust.'"""
    first = re.split(r"(?<=[.!?])\s", persona, maxsplit=1)[0].strip()
    if not first:
        return ""
    if not first.endswith((".", "!", "?")):
        first += "."
    if re.match(r"(A|An|The)\b", first):
        first = first[0].lower() + first[1:]
    return _clip(first, 140)


# --- both --------------------------------------------------------------------------------------


def begin(
    category: str, world: dict, *, opening: str = "", character: dict | None = None
) -> Story | Character | None:
    """The narrative a new world of this category starts with (None: it has none)."""
    if category == "stories":
        return story_start(opening, world)
    if category == "characters":
        return character_start(character if isinstance(character, dict) else {})
    return None


def _chosen(meta: dict) -> tuple[str, ...]:
    """The picks before the lines after the opening; a snapshot from before they were kept has
    none, and its older lines get "" (nobody knows what was picked)."""
    after_opening = max(0, len(meta["lines"]) - 1)
    chosen = (
        tuple(str(c) for c in meta.get("chosen") or [])[-after_opening:] if after_opening else ()
    )
    return ("",) * (after_opening - len(chosen)) + chosen


def from_meta(meta) -> Story | Character | None:
    """Rebuild a state from `to_meta()`; anything unreadable gives None (the world still plays)."""
    if not isinstance(meta, dict):
        return None
    try:
        if meta.get("kind") == "story":
            options = tuple(
                Option(
                    beat=o[0],
                    label=o[1],
                    narration=o[2],
                    event=(_LEGACY_KINDS.get(o[3], o[3]), o[4]),
                )
                for o in meta.get("options") or []
            )
            if any(o.event not in EVENTS for o in options):
                options = ()
            return Story(
                lines=tuple(str(line) for line in meta["lines"]) or ("",),
                picks=tuple(str(p) for p in meta.get("picks") or []),
                offered=tuple(str(p) for p in meta.get("offered") or []),
                index=int(meta.get("index") or 0),
                options=options,
                summary=str(meta.get("summary") or ""),
                labels=tuple(str(label) for label in meta.get("labels") or []),
                chosen=_chosen(meta),
            )
        if meta.get("kind") == "character":
            return Character(
                name=str(meta["name"]),
                persona=str(meta.get("persona") or ""),
                greeting=str(meta.get("greeting") or ""),
                turn=int(meta.get("turn") or 0),
                greeted=bool(meta.get("greeted")),
                last_intent=str(meta.get("last_intent") or ""),
                examples=tuple(str(e) for e in meta.get("examples") or []),
                memory=tuple((str(a), str(b)) for a, b in meta.get("memory") or []),
                summary=str(meta.get("summary") or ""),
                world=str(meta.get("world") or ""),
            )
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return None


def _clean(text: str) -> str:
    return " ".join(str(text).split())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
