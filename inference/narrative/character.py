"""A character world's narrative state: its card, its memory of the talk, the world it saw.

Pure functions over small frozen dataclasses, as ``story.py``'s. What the character says is not
here: a language model writes it (``character_replies.py``), the grammar answers when none does
(``grammar.character_reply``). Django-free.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from inference.narrative.examples import MAX_EXAMPLES, default_greeting
from inference.narrative.lines import MAX_LINE_CHARS, clean, clip, rolling_summary
from inference.narrative.world_words import EVENTS, Event

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
MAX_REPLY_CHARS = 200
PLAYER_SPEAKER = "Player"


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
        summary = rolling_summary(summary, f"{who} said: {clip(text, 120)}")
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
    name = clean(str(card.get("name") or ""))[:60] or "Stranger"
    persona = clean(str(card.get("persona") or ""))
    greeting = clean(str(card.get("greeting") or "")) or default_greeting(name)
    raw = card.get("examples") or ()
    examples = (
        tuple(clip(clean(e), MAX_LINE_CHARS) for e in raw if isinstance(e, str) and e.strip())[
            :MAX_EXAMPLES
        ]
        if isinstance(raw, list | tuple)
        else ()
    )
    return Character(name=name, persona=persona, greeting=greeting, examples=examples)


def character_greet(character: Character) -> tuple[Character, str]:
    return replace(character, greeted=True), character.greeting


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
