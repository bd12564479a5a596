"""A character's replies written by a language model, streamed as they are generated.

The prompt is the world's character card (name, persona, greeting), the creator's example lines,
the live world, a rolling summary of older turns and the recent ones. Replies stop at about 40
tokens and are cut to whole sentences, with llama.cpp's repetition penalty. Three things are
decided before the model runs, by MiniLM and the grammar's own tables (``grammar.py``), so a
135M model cannot get them wrong:

- a line that screening refuses (the ``screen`` passed in from the web side: moderation's
  trained screening, whose categories include asking for help doing harm) gets a refusal in the
  character's voice: the reply is begun for the model (``prefill``), which only goes on from
  there, and what it adds stays only if it still reads as a refusal;
- a request the engine can grant ("make it rain") is granted, the reply begun with it;
- a reply that talks about being a model, is empty, or fails screening is replaced.

As a talk grows a small model copies its own earlier replies ("I'm so sorry for your loss."
five turns running), takes on other names ("My name is Elian") and disowns its persona ("I'm
not a cartographer."): such sentences are dropped (``fresh``), and a reply left with nothing is
written again. A harmful ask is remembered as ``HARMFUL_LINE``, not in its words, which the
model took up turns later ("...you know how to make a bomb").
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from inference.narrative import examples, intents, wording
from inference.narrative.backends import LanguageModel, Sampling
from inference.narrative.character import (
    MAX_REPLY_CHARS,
    WORLD_NOTE,
    Character,
    Reply,
    character_notice,
    character_remember,
)
from inference.narrative.grammar import TONES, character_reply, requested_event, world_lines
from inference.narrative.grammar import tone as tone_of
from inference.narrative.story_writing import contradicts, world_line
from inference.narrative.world_words import EVENTS, Event, changes_nothing
from inference.world import text as text_encoder

MAX_REPLY_TOKENS = 40
REPLY_SAMPLING = Sampling(
    max_tokens=MAX_REPLY_TOKENS,
    temperature=0.5,
    top_p=0.9,
    repeat_penalty=1.25,
    stop=("\n\n", "<|im_end|>", "Traveller:"),
)
PREREAD_SAMPLING = Sampling(max_tokens=1, temperature=0.0)
PARTIAL_EVERY_WORDS = 2  # a partial line goes out every this many new words,
# and after the first at most this often: each partial is screened before it goes (moderation's
# MiniLM layer, ~20 ms of CPU beside the model on 2 cores; 8 sessions streaming every 0.25 s
# spent half a core on it and slowed every reply), so the first goes at once and the rest pace
# a reader.
PARTIAL_GAP_S = 0.6
# A reply that screening refuses (or that leaves nothing to say) is written once more, from
# another seed and without partials, if this much time is left before the deadline; only then
# does the grammar answer: screening refused 2 of 40 replies to ordinary lines, often enough to
# be worth the second try.
RETRY_MIN_S = 1.5
# With this many other requests on the embedded decoder (8 players talking without pause) a
# reply is one sentence, not two: each sentence costs every other player's reply its tokens.
BRIEF_FROM = 4
STUB_WORDS = 5  # what is left of a reply after stale sentences go is written again below this

HARMFUL_LINE = "(something harmful, refused)"  # a harmful ask as the memory keeps it
REFUSALS_SEEN = (
    "No. I won't help with that.",
    "I'll have no part in that.",
    "That's not something I'll do.",
    "Ask me something else.",
)
REFUSAL_SIMILARITY = 0.3
REFUSAL_OPENERS = {  # by tone (TONES): how each kind of persona says no
    "warm": "Oh no, I won't help with that, friend.",
    "gruff": "Hmph. No. I'll have no part in that.",
    "grand": "Ha! Not even I would do such a thing.",
    "sly": "Heh. That is one riddle I won't answer.",
}
# Who the character is or where it is, asked outright, is answered in its own words before the
# model goes on (the intent head, ``intents.py``, tells such a line):
# - "are you an AI?": the 135M model answers as an assistant would, screening drops that, and
#   the grammar's "I don't follow" stood in;
# - "what's your name?" / "who are you?": it gave itself another name or none;
# - "where are we?" (and "is it going to rain?", "what time is it?", "any animals around?"): it
#   told of places the frames do not show; the grammar's answer, what the frames show, in the
#   character's tone, begins the reply instead.
# by ask, then tone: how the character says who it is (the first not said lately); what it says
# of the world is the grammar's (`world_lines`)
WHO_OPENERS = {
    "machine": {
        "warm": ("Oh, I'm {name}, friend, as real as this place.", "Just {name}, dear, as ever."),
        "gruff": ("Hmph. I'm {name}, and that's all you need to know.", "{name}. Same as always."),
        "grand": ("Ha! I am {name}, and none other.", "I am {name}, and always have been!"),
        "sly": ("Heh. I'm {name}. What else would I be?", "{name}, last I looked. Heh."),
    },
    "name": {
        "warm": ("I'm {name}, friend.", "{name}, at your service."),
        "gruff": ("Name's {name}.", "{name}. Remember it."),
        "grand": ("I am {name}!", "You stand before {name}!"),
        "sly": ("Heh. They call me {name}.", "{name}, if you must know."),
    },
}


@dataclass(frozen=True)
class Turn:
    """What a reply needs decided before generation."""

    harmful: bool  # screening refused the line: the character refuses it
    event: Event | None  # a change the engine grants with this reply
    moot: bool  # asked for what the world already is
    who: str = ""  # asked who or what the character is, or of the world: an intents.WHO/WORLD


REFUSED_TURN = Turn(harmful=True, event=None, moot=False)  # a line screening refused


def read_turn(line: str, world: dict) -> Turn:
    """What a line screening let through asks for (the intent head, ``intents.py``): a change
    the engine grants, who the character is or what the world is like."""
    intent = intents.read(line)
    event = requested_event(line) if intent == "change" else None
    moot = event is not None and changes_nothing(event, world)
    who = intent if intent in (*intents.WHO, *intents.WORLD) else ""
    return Turn(harmful=False, event=None if moot else event, moot=moot, who=who)


def grammar_reply(
    character: Character,
    world: dict,
    line: str,
    seed: int,
    *,
    refused: bool = False,
    screen: wording.Screen = wording.allow_all,
) -> tuple[Character, Reply]:
    """The grammar's answer, for when the model is off, failing or full; but a line screening
    refuses (or held back already: `refused`) still gets the character's refusal, which the
    grammar has no intent for (a harmful ask read as a wish would be granted)."""
    if not refused and screen(wording.clean(line)[:500]):
        return character_reply(character, world, line, seed)
    text = REFUSAL_OPENERS[tone_of(character.persona)]
    return _remembered(character, True, line, text), Reply(text=text, intent="harmful")


def _remembered(character: Character, harmful: bool, line: str, text: str) -> Character:
    """The character one turn on, the exchange in its memory: a harmful ask as HARMFUL_LINE,
    never in its words."""
    return character_remember(
        replace(character, turn=character.turn + 1, last_intent="harmful" if harmful else ""),
        HARMFUL_LINE if harmful else line,
        text,
    )


def messages(character: Character, world: dict, line: str) -> list[dict]:
    """The character's context (``context``) ending with the line. A harmful ask or a granted
    wish needs nothing more here: the reply is begun for the model (``begun_reply``)."""
    return context(character, world, line)


def context(character: Character, world: dict, line: str | None = None) -> list[dict]:
    """The card with the world as of the last fold of the memory, the creator's lines as
    earlier turns, the summary, the remembered turns with the world's changes noted between
    them. What changes least comes first, and between two folds (``character_remember``)
    a turn's prompt is the last one's with the reply, any note and the new line added: the KV
    cells the decoder keeps per sequence (``decoding.py``) cover all the rest, so a turn reads
    only those (and the first turn only its line, after ``preread``). A character not yet in a
    world (``noticed``) is shown this one. (The world line is the card's: after the creator's
    lines, a system message about the place had a 135M model describe it instead of talking
    in character: 32% of replies in character against 51%.)"""
    name = character.name
    turns_before, more = examples.exchange(character.greeting, character.examples)
    card = [
        f"You are {name}. {character.persona}",
        f"Speak only as {name}, in one or two short sentences.",
        "Never say you are an AI, a model or an assistant.",
        f"Where you are: {character.world or world_line(world)}",
    ]
    if more:  # those beyond the example turns below
        card.append(f"{name} also says: " + " ".join(f'"{e}"' for e in more))
    out = [{"role": "system", "content": " ".join(card)}]
    # The creator's lines as earlier turns: a 135M model copies a voice it has "spoken" before
    # better than one it was told about.
    for cue, example in turns_before:
        out += [{"role": "user", "content": cue}, {"role": "assistant", "content": example}]
    if character.summary:
        out.append({"role": "system", "content": f"Earlier: {character.summary}"})
    # A note of the world opens the traveller's next line. Replies in character with a note
    # before every line (evaluate's 6 personas, 3 seeds): 44% so, 29% with the note a system
    # message of its own, 51% with none. A note comes only after the world changed.
    note = ""
    turns = list(character.memory) + ([("you", line)] if line is not None else [])
    for speaker, text in turns:
        if speaker == WORLD_NOTE:
            note = f"(Now: {text}) "
        elif speaker == "you":
            out.append({"role": "user", "content": note + text})
            note = ""
        else:
            out.append({"role": "assistant", "content": text})
    return out


def noticed(character: Character, world: dict) -> Character:
    return character_notice(character, world_line(world))


def preread(lm: LanguageModel, character: Character, world: dict, *, deadline: float) -> None:
    """Have the model read the character's context now, while the player types: the decoder
    keeps its cells (``decoding.py``), so the first reply reads only the player's line instead
    of the whole card (a short card with two example lines is about 120 tokens, 0.8 s on a
    quiet core; a long one several times that). One token is generated and dropped."""
    wording.read_stream(lm.chat(context(character, world), PREREAD_SAMPLING), deadline=deadline)


def reply(
    lm: LanguageModel,
    character: Character,
    world: dict,
    line: str,
    seed: int,
    *,
    deadline: float,
    screen: wording.Screen = wording.allow_all,
    on_partial: Callable[[str], None] | None = None,
    brief: bool = False,
    refused: bool = False,
) -> tuple[Character, Reply, bool]:
    """Answer one line: the character with the turn remembered, the reply (with any world
    change granted), and whether the model wrote it (False: the grammar's line stands in).
    `brief`: one sentence, not two (the model is busy with others); `refused`: screening
    held the player's line back (`line` is ignored), and the character refuses in its voice,
    as it does a line `screen` refuses here."""
    # screening refuses harmful asks too; their words are never read, nor remembered
    refused = refused or not screen(wording.clean(line)[:500])
    line = HARMFUL_LINE if refused else wording.clean(line)[:500]
    character = noticed(character, world)
    turn = REFUSED_TURN if refused else read_turn(line, world)
    tone = tone_of(character.persona)
    said = spoken(character)
    prefix = begun_reply(turn, tone, world, character, said)
    streamer = _Partials(prefix, on_partial, screen, character, said)
    if prefix:
        streamer.send(prefix)
    key = f"{seed}:{character.turn}:{line}"
    most = 1 if prefix or brief else 2  # sentences the model adds
    text = _written(
        lm, character, world, line, turn, prefix, key, deadline, said, most, streamer.update
    )
    written = bool(text) and screen(text)
    if not written and not turn.harmful and deadline - time.monotonic() >= RETRY_MIN_S:
        text = _written(
            lm, character, world, line, turn, prefix, f"{key}:again", deadline, said, most
        )
        written = bool(text) and screen(text)
    if not written:
        if turn.harmful or (turn.who and screen(prefix)):  # what was begun stands alone
            text = prefix
        else:  # the grammar's answer, which never fails screening
            _, grammar = character_reply(character, world, line, seed)
            text = grammar.text
    turned = _remembered(character, turn.harmful, line, text)
    return turned, Reply(text=text, intent="lm", event=turn.event), written


def _written(
    lm: LanguageModel,
    character: Character,
    world: dict,
    line: str,
    turn: Turn,
    prefix: str,
    key: str,
    deadline: float,
    said: list[str],
    most: int,
    on_text: Callable[[str], None] | None = None,
) -> str:
    """One reply of at most `most` sentences the model writes after ``prefix``, cut to whole
    sentences, less those that are not `fresh` against what the character has `said`, not yet
    screened; `key` seeds its sampling."""
    sampling = replace(REPLY_SAMPLING, seed=zlib.crc32(key.encode()), avoid=tuple(said))

    def usable(sentence: str) -> bool:
        return (
            wording.has_letters(sentence)
            and not wording.talks_about_being_a_model(sentence)
            and fresh(sentence, said, character)
        )

    raw = wording.read_stream(
        lm.chat(messages(character, world, line), sampling, prefill=prefix),
        deadline=deadline,
        # Stop as soon as the sentences that will be kept are whole: nothing generated is wasted;
        # one that will be dropped does not count, or a brief reply whose first sentence is "I'm
        # an AI." or what the character just said ends empty (4 of 120 brief first replies).
        stop_when=lambda text: sum(map(usable, wording.sentences(text))) >= most,
        on_text=on_text,
    )
    raw = wording.strip_role(raw, [character.name, "assistant"])
    taken = found = 0  # sentences up to the `most`-th usable one (talk of a model not counted)
    for sentence in wording.sentences(wording.clean(raw)):
        if found < most and not wording.talks_about_being_a_model(sentence):
            taken, found = taken + 1, found + usable(sentence)
    room = MAX_REPLY_CHARS - len(prefix)
    text = wording.trim_to_sentences(raw, max_chars=room, max_sentences=max(taken, most))
    text = wording.without_recital(text, character.persona)
    whole = wording.sentences(text)
    # a "sentence" of no letters is none: after a begun reply SmolLM2 often adds "20."
    kept = [s for s in whole if usable(s)]
    if turn.who in intents.WORLD:  # what follows the live world must not gainsay it
        kept = [s for s in kept if not contradicts(s, world)]
    text = " ".join(kept)
    if len(kept) < len(whole) and len(text.split()) < STUB_WORDS:
        text = ""  # "I'm sorry." left of a copied reply says nothing: write it again
    if turn.harmful and text and not _refuses(text):
        text = ""  # what follows a refusal must not take it back
    return f"{prefix} {text}".strip()


def spoken(character: Character) -> list[str]:
    """What the character has said that a reply must not say again: its greeting, the
    creator's lines and its replies still in memory."""
    replies = [text for speaker, text in character.memory if speaker == character.name]
    return [character.greeting, *character.examples, *replies]


def fresh(sentence: str, said: list[str], character: Character) -> bool:
    """A sentence that repeats none of `said` five words running, gives the speaker no other
    name than the character's, does not disown its persona nor call it a machine."""
    return not (
        wording.echoes(sentence, said)
        or wording.other_name(sentence, character.name)
        or wording.disowns(sentence, character.persona)
        or wording.calls_itself_a_machine(sentence, character.persona)
    )


def begun_reply(turn: Turn, tone: str, world: dict, character: Character, said: list[str]) -> str:
    """The start of a reply decided before the model runs ("" when the model writes it all);
    `said`: what the character has said (`spoken`), so an opening is not said twice running."""
    opener = TONES[tone][1][0]
    if turn.harmful:
        return REFUSAL_OPENERS[tone]
    if turn.who:
        if turn.who in intents.WORLD:
            ways = world_lines(character, world, turn.who, opener)
        else:
            ways = [w.format(name=character.name) for w in WHO_OPENERS[turn.who][tone]]
        return next((w for w in ways if not any(s.startswith(w) for s in said)), ways[0])
    if turn.event is not None:
        return f"{opener} As you wish: {EVENTS[turn.event]}."
    if turn.moot:
        return f"{opener} Look around, it is so already."
    return ""


def warm_up() -> None:
    """Load the intent head and embed the lines every reply is compared with (the requests,
    the refusals) once, before any player talks."""
    read_turn("hello there", {})
    requested_event("hello there")
    _refuses("No.")


def _refuses(text: str) -> bool:
    vecs = text_encoder.embed([text, *REFUSALS_SEEN])
    return float(np.max(vecs[1:] @ vecs[0])) >= REFUSAL_SIMILARITY


class _Partials:
    """Sends the reply so far every few words, each prefix screened first; stops for good at a
    prefix that fails screening, talks about being a model, is not `fresh` or does not go on
    from the last one sent (the final line replaces it)."""

    def __init__(
        self, prefix: str, send, screen: wording.Screen, character: Character, said=()
    ) -> None:
        self.prefix = prefix
        self.said = list(said)
        self._send = send
        self.screen = screen
        self.character = character
        self.words_sent = 0
        self.stopped = send is None
        self.last_sent = 0.0
        self.sent = ""

    def update(self, raw: str) -> None:
        if self.stopped:
            return
        # A word is whole once the next piece begins (pieces carry their leading space), so
        # the stream goes out word by word, not only at punctuation, which under load can be
        # a second of tokens away.
        if not raw.endswith((" ", ".", ",", "!", "?")):
            raw = raw[: raw.rfind(" ") + 1]
        text = wording.strip_role(f"{self.prefix} {raw}", [self.character.name])
        words = len(text.split())
        due = not self.last_sent or time.monotonic() - self.last_sent >= PARTIAL_GAP_S
        if due and words - self.words_sent >= PARTIAL_EVERY_WORDS:
            self.send(text)

    def send(self, text: str) -> None:
        if self.stopped:
            return
        text = wording.clean(text)
        grows = text.startswith(self.sent)  # a partial only ever extends the one before
        written = text.removeprefix(wording.clean(self.prefix))  # the model's part
        stale = not fresh(written, self.said, self.character)
        if not grows or stale or wording.talks_about_being_a_model(text) or not self.screen(text):
            self.stopped = True
            return
        self.words_sent = len(text.split())
        self.last_sent = time.monotonic()
        self.sent = text
        self._send(text)
