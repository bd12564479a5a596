"""Story options and narration written by a language model.

Options are a few-shot completion ("Story: … / World: … / Choices: 1. … 2. …"): that format
works the same on a base model (Gemma 3 270M) and an instruct one, and its fixed prefix stays in
llama.cpp's prompt cache between calls. The completion is decoded under a grammar
(``OPTIONS_GRAMMAR``: two options of 2 to 12 words), so a reply parses by construction; a backend
that ignores the grammar is read leniently (``parse_options``). Each option is at most 12 words,
distinct from the other and from recent picks, screened, and grounded to an engine event
(``grounding.py``), so picking it visibly changes the world: the two options change it two ways,
neither as the last pick did.
A narration is kept only where it tells what the world then shows (``tells``). What the model
cannot supply in a few tries the grammar does (``grammar.story_offer``), so a pair is always on
offer.

The example stories in the prompt are kept apart from the evaluation's (``evaluate.py``).
"""

from __future__ import annotations

import re
import time
import zlib
from dataclasses import replace

import numpy as np

from inference.narrative import grammar, grounding, wording, world_words
from inference.narrative.lines import MAX_LINE_CHARS, with_article
from inference.narrative.lm import LanguageModel, Sampling
from inference.narrative.story import Option, Story
from inference.narrative.world_words import Event
from inference.world import text as text_encoder

MAX_OPTION_WORDS = 12
ATTEMPTS = 3  # completions tried for a pair before the grammar fills in
NARRATION_ATTEMPTS = 2  # narrations tried before the grammar tells the pick
GRAMMAR_DRAWS = 4  # grammar pairs drawn at most while screening refuses their options
SIMILAR = 0.86  # MiniLM similarity at which two options count as the same
LM_BEAT = "lm:"  # a written option's beat: "lm:<kind>:<value>" of its event
# Below this similarity to its nearest event exemplar an option causes nothing the engine
# knows: it is dropped rather than offered with a change it does not describe.
MIN_GROUNDED = 0.35
# The completion after "Choices:\n1.": two options, each a capitalised run of 2 to
# MAX_OPTION_WORDS words of letters, digits, apostrophes and hyphens (a comma may end a word)
# ending in a letter or digit, as ``valid_option`` takes them; then the blank line that ends
# each example (a stop string: without it the model could only go on with the second option).
OPTIONS_GRAMMAR = rf"""
root   ::= " " option "\n2. " option "\n\n"
option ::= [A-Z] [A-Za-z0-9]* (['-] [A-Za-z0-9]+)* (","? " " word){{1,{MAX_OPTION_WORDS - 1}}}
word   ::= [A-Za-z0-9]+ (['-] [A-Za-z0-9]+)*
"""
OPTION_SAMPLING = Sampling(max_tokens=36, temperature=0.9, top_p=0.95, repeat_penalty=1.2,
                           stop=("\n\n", "Story:", "\n3", "World:"),
                           grammar=OPTIONS_GRAMMAR)  # fmt: skip
# Text as OPTIONS_GRAMMAR writes it.
_WRITTEN = re.compile(r"\s*([A-Z][^\n]*[A-Za-z0-9])\n2\. ([A-Z][^\n]*[A-Za-z0-9])\s*")
NARRATION_SAMPLING = Sampling(max_tokens=40, temperature=0.7, top_p=0.9, repeat_penalty=1.15,
                              stop=("\n", "Story:", "Choice:"))  # fmt: skip

OPTIONS_PREFIX = """Each story goes on with two short choices for what the hero does next.

Story: A caravan lost its way among the dunes. The guide has not spoken since noon.
World: dunes, clear sky, day. Nearby: a bird.
Choices:
1. Follow the bird toward the distant ruins
2. Make camp and wait for nightfall

Story: The old bell in the village square rang by itself at dawn.
World: streets, fog, day. Nearby: nothing.
Choices:
1. Climb the bell tower before the fog rolls in
2. Leave bread by the door for the stray fox

Story: Snow has buried the road to the pass, and the wolves are close.
World: snowfield, snow, dusk. Nearby: a wolf.
Choices:
1. Light a fire and wait for the sun to rise
2. Call out to the wolf in the dark
"""

# Two of the examples tell a change of the time of day: with the fog and the fox alone, Gemma
# told 22% of time-of-day picks (126 picks of the evaluation's 6 stories: every pick by model
# 70 -> 92% with night and dawn; time 22 -> 89%, weather 61 -> 89%)
NARRATION_PREFIX = """Each choice is followed by one sentence that tells what happened.

Story: The old bell in the village square rang by itself at dawn.
Choice: Climb the bell tower to see who rang it
Then: fog rolls in
Narration: You climb the narrow stairs, and from the top you watch fog roll over the rooftops.

Story: A caravan lost its way among the dunes.
Choice: Follow the bird toward the distant ruins
Then: a fox appears
Narration: The bird leads you to a broken wall, where a fox watches you from the shade.

Story: Snow has buried the road to the pass, and the wolves are close.
Choice: Wait in the hut until it is dark
Then: night falls
Narration: You bar the door of the hut and watch night fall over the snowy pass.

Story: The ferryman will not cross the river in the dark.
Choice: Sleep by the river until morning
Then: dawn breaks
Narration: You sleep on the bank, and dawn breaks pink over the still water.
"""


def world_line(world: dict) -> str:
    place = world_words.describe_place(world)
    weather = world_words.WEATHER_WORDS.get(world.get("weather", ""), "clear sky")
    creatures = [with_article(c) for c in sorted(set(world.get("creatures") or []))]
    things = [world_words.THING_WORDS.get(t, t) for t in sorted(set(world.get("things") or []))]
    ground = [
        world_words.COVER_WORDS[c]
        for c in world.get("covers") or []
        if c in world_words.COVER_WORDS
    ]
    nearby = ", ".join(creatures + things + ground) or "nothing"
    return f"{place}, {weather}, {world_words.time_of(world)}. Nearby: {nearby}."


def story_context(story: Story) -> str:
    return wording.clean(" ".join([story.summary, *story.recent_lines]))[-700:]


def options_prompt(story: Story, world: dict) -> str:
    return (
        f"{OPTIONS_PREFIX}\nStory: {story_context(story)}\nWorld: {world_line(world)}\nChoices:\n1."
    )


def read_options(text: str) -> list[str]:
    """The options of a completion after '1.': as the grammar writes them, else (a backend
    that ignored the grammar) read leniently."""
    written = _WRITTEN.fullmatch(text)
    if written:
        return [written[1], written[2]]
    return parse_options(text)


def parse_options(text: str) -> list[str]:
    """'Row out…\\n2. Climb…' (free text after '1.') -> ['Row out…', 'Climb…']."""
    out = []
    for raw in re.split(r"\n\s*\d[.)]\s*", "\n1. " + text.strip()):
        label = wording.clean(raw).strip(" \"'*-–").rstrip(".!,;:")
        if label:
            out.append(label[:1].upper() + label[1:])
    return out


def valid_option(label: str) -> bool:
    if not 2 <= len(label.split()) <= MAX_OPTION_WORDS or wording.talks_about_being_a_model(label):
        return False
    return re.fullmatch(r"[A-Za-z][A-Za-z0-9 ,'’\-]*[A-Za-z0-9]", label) is not None


def offer(
    lm: LanguageModel,
    story: Story,
    world: dict,
    seed: int,
    *,
    deadline: float,
    screen: wording.Screen = wording.allow_all,
) -> tuple[Story, bool]:
    """The story with the next pair on offer, and whether the model wrote both options (False:
    the grammar filled in at least one)."""
    index = story.index + 1
    base_seed = zlib.crc32(f"{seed}:{index}:{story_context(story)}".encode()) & 0x7FFFFFFF
    options: list[Option] = []  # accepted, in order
    recent = list(story.labels)
    # Each option changes the world its own way, and not as the last pick just did.
    used_events = {_picked_event(story)}
    prompt = options_prompt(story, world)
    for attempt in range(ATTEMPTS):
        if len(options) == 2 or _late(deadline):
            break
        sampling = replace(OPTION_SAMPLING, seed=base_seed + attempt)
        text = wording.read_stream(lm.complete(prompt, sampling), deadline=deadline)
        for label in (label for label in read_options(text) if valid_option(label)):
            if len(options) == 2:
                break
            # Each grounded to its nearest change not taken: two options that both read as
            # "a deer" make the second one's next nearest, where it is near enough.
            ((event, similarity),) = grounding.ground_many([label], world, frozenset(used_events))
            taken = [o.label for o in options]
            if similarity >= MIN_GROUNDED and _fresh(label, taken + recent) and screen(label):
                options.append(_option(label, event))
                used_events.add(event)
    written = len(options) == 2
    if not written:
        options += _grammar_options(story, world, seed, options, recent, screen, used_events)
    return replace(story, index=index, options=tuple(options[:2])), written


def _grammar_options(story, world, seed, options, recent, screen, used_events):
    """What the grammar adds to complete the pair: options screened like the model's, fresh
    against what was written and changing the world another way, drawn from further seeds
    while screening refuses some; failing that a screened one that is not fresh, and last the
    templates as they are (text we wrote) rather than fewer than two options."""
    drawn: dict[str, Option] = {}  # by label, in the order drawn
    passed: list[Option] = []
    for k in range(GRAMMAR_DRAWS):
        for option in grammar.story_offer(story, world, seed + k).options:
            if option.label not in drawn:
                drawn[option.label] = option
                if screen(option.label):
                    passed.append(option)
        if len(passed) >= 2:
            break
    added: list[Option] = []
    tiers = ((passed, True, True), (passed, True, False), (passed, False, False),
             (list(drawn.values()), False, False))  # fmt: skip
    for pool, fresh, new_event in tiers:
        for option in pool:
            taken = [o.label for o in [*options, *added]]
            if len(options) + len(added) < 2 and option.label not in taken:
                if new_event and option.event in used_events | {o.event for o in added}:
                    continue
                if not fresh or _fresh(option.label, taken + recent):
                    added.append(option)
    return added


def _option(label: str, event: Event) -> Option:
    return Option(beat=f"{LM_BEAT}{event[0]}:{event[1]}", label=label, narration="",
                         event=event)  # fmt: skip


def _picked_event(story: Story) -> Event | None:
    """The event of the last pick, where it was a written option (a grammar beat's own
    freshness rules keep it from coming straight back)."""
    if story.picks and story.picks[-1].startswith(LM_BEAT):
        kind, _, value = story.picks[-1].removeprefix(LM_BEAT).partition(":")
        return kind, value
    return None


def _fresh(label: str, others: list[str]) -> bool:
    """Not the same as any of `others`: neither the same words nor nearly the same meaning."""
    if not others:
        return True
    key = _key(label)
    if any(_key(o) == key for o in others):
        return False
    vecs = text_encoder.embed([label, *others])
    return float(np.max(vecs[1:] @ vecs[0])) < SIMILAR


def _key(label: str) -> str:
    return " ".join(re.findall(r"[a-z]+", label.lower()))


def narrate(
    lm: LanguageModel,
    story: Story,
    picked: Option,
    world: dict,
    *,
    deadline: float,
    screen: wording.Screen = wording.allow_all,
) -> str:
    """One sentence telling what the pick did (its event included) in the `world` after it; ""
    when the model gave nothing usable in time (the caller falls back to the grammar's line)."""
    prompt = (
        f"{NARRATION_PREFIX}\nStory: {story_context(story)}\nChoice: {picked.label}\n"
        f"Then: {world_words.told(picked.event)}\nNarration:"
    )
    seed = zlib.crc32(f"{picked.label}:{len(story.lines)}".encode()) & 0x7FFFFFFF
    recent = list(story.recent_lines)
    for attempt in range(NARRATION_ATTEMPTS):
        if _late(deadline):
            break
        sampling = replace(NARRATION_SAMPLING, seed=seed + attempt, avoid=tuple(recent))
        text = wording.read_stream(lm.complete(prompt, sampling), deadline=deadline)
        line = wording.trim_to_sentences(text, max_chars=MAX_LINE_CHARS, max_sentences=1)
        if line and tells(line, picked.event, world) and _fresh(line, recent):
            if not wording.echoes(line, recent) and screen(line):
                return line
    return ""


def tells(line: str, event: Event, world: dict) -> bool:
    """Whether a narrated line tells what the world shows: it is about the pick's event (its
    nearest event is that one), names no creature the world does not have, and no clause of
    it names another time of day or atmosphere than the world's. A small model often tells of
    something else ("a fox watches you" where a deer came; "The sun rises, and a campfire is
    lit." at night), and the player would see the story and the world disagree."""
    if grounding.ground(line, None) != event:
        return False
    present = set(world.get("creatures") or [])
    if not all(c in present for c in grounding.creatures_named(line)):
        return False
    return not contradicts(line, world)


def contradicts(line: str, world: dict) -> bool:
    """Whether a clause of `line` names a time of day or an atmosphere the world does not
    show."""
    clauses = [c for c in _CLAUSE.split(line) if len(c.split()) >= 2]
    return any(
        kind in SHOWN_STATE and sim >= CLAUSE_NAMES and value != world.get(kind)
        for (kind, value), sim in grounding.ground_many(clauses, None)
    )


# A line's clauses, each checked against the world on its own: the whole line's nearest event
# is the pick's while "The sun rises" in front of it says morning.
_CLAUSE = re.compile(r"[,;:]|\b(?:and|then|as|while|but)\b", re.I)
SHOWN_STATE = ("time", "weather")  # what every frame shows, so a line must not contradict
# A clause this near a time of day or an atmosphere names it ("The sun rises" 0.93 from day,
# "It is a bright morning" 0.71 from dawn; "The light shines in the dark" 0.69 from night and
# "the wind howls" 0.50 from falling petals do not).
CLAUSE_NAMES = 0.7


def grammar_narration(picked: Option, world: dict) -> str:
    """The line for a generated option the model could not narrate: the pick and its event."""
    action = picked.label[:1].lower() + picked.label[1:]
    return f"You {action}, and {world_words.told(picked.event)} {world_words.in_place(world)}."


def _late(deadline: float) -> bool:
    return time.monotonic() > deadline
