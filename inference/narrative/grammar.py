"""The grammar: story beats and reply templates, the narrative when no language model answers.

A backend that is off, fails or runs out of time leaves the story and the characters to this.
Text comes from beats and templates whose slots are filled from the world's live state
(`WorldEngine.describe`) and the story so far; the all-MiniLM-L6-v2 encoder
(`inference.world.text`) ranks candidate beats by coherence with the story (and keeps the two
options apart), and sorts a player's line into an intent by its nearest exemplar. Every beat
and granted request causes an event of ``world_words.EVENTS``. Django-free.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, replace

import numpy as np

from inference.narrative import intents
from inference.narrative.character import MAX_REPLY_CHARS, Character, Reply, character_remember
from inference.narrative.lines import and_list, clean, clip, with_article
from inference.narrative.story import Option, Story
from inference.narrative.world_words import (
    EVENTS,
    LANDMARKS,
    TIME_PHRASES,
    TIME_WORDS,
    WEATHER_WORDS,
    Event,
    changes_nothing,
    describe_place,
    in_place,
    time_of,
    told,
)
from inference.world import spec
from inference.world import text as text_encoder

# --- story beats -----------------------------------------------------------------------------


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


# Concrete nouns a story may be about; the ones it mentioned last fill the options' {motif}.
MOTIFS = (
    "lighthouse boat boats ship harbour letter map caravan tracks campfire queen envoy castle "
    "tower bridge shrine door key mushrooms lantern bell well road path river cave crown sword "
    "book stranger wagon cart garden statue gate ruins market tent fence house pond fountain "
    "anchor idol"
).split()
MOTIFS_RECENT = 3


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
            fitting = [c for c in spec.CREATURES if c not in beat.excludes]
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


# --- character replies -----------------------------------------------------------------------

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
    **{("creature", c): (f"bring a {c} here", f"summon a {c}") for c in spec.CREATURES},
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
    return [clip(" ".join(t.format(**slots).split()), MAX_REPLY_CHARS) for t in REPLIES[intent]]


def character_reply(
    character: Character, world: dict, line: str, seed: int
) -> tuple[Character, Reply]:
    """Answer one player line in character; deterministic for (seed, turn, line, world)."""
    line = clean(line)[:500]
    intent, _ = classify(line) if line else ("unknown", 0.0)
    requested = requested_event(line) if line else None
    if requested is not None and intents.read(line) == "change":
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
    text = clip(" ".join(text.split()), MAX_REPLY_CHARS)
    turned = character_remember(
        replace(character, turn=character.turn + 1, last_intent=intent), line, text
    )
    event = requested if key == "change_done" else None
    return turned, Reply(text=text, intent=intent, event=event)


def _reply_slots(character: Character, world: dict, event: Event | None, rng) -> dict:
    _, openers, end = TONES[tone(character.persona)]
    place = describe_place(world)
    weather, time = world.get("weather", "clear"), time_of(world)
    creatures = sorted(set(world.get("creatures") or []))
    persona = _persona_clause(character.persona) or f"and I make my home {in_place(world)}{end}"
    weather_phrase = WEATHER_PHRASES.get(weather, "the weather as it comes")
    time_word = TIME_WORDS.get(time, "daytime")
    if creatures:
        creature_phrase = f"I've seen {and_list([with_article(c) for c in creatures])} about{end}"
    else:
        creature_phrase = f"Nothing stirs {in_place(world)} just now{end}"
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
        "in_place": in_place(world),
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


def tone(persona: str) -> str:
    """The tone whose description in TONES is nearest the persona card ("warm" for none)."""
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
    return clip(first, 140)
