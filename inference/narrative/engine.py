"""The narrative's old single module, split by job: the names its callers outside this folder
still import from here, until each imports from its module's own home:

- ``world_words``: events (``EVENTS``, ``Event``) and the words for a world's state;
- ``story``: ``Story``, ``Option``, ``story_start``, ``story_pick``, ``choices_message``;
- ``character``: ``Character``, ``Reply``, ``character_start``, its memory and transcript;
- ``grammar``: the fallback when no model answers (``story_offer``, ``character_reply``, the
  intents, requests, ``REQUEST_CUE`` and tones);
- ``state``: ``begin`` and ``from_meta`` (a snapshot's narrative).

Nothing is defined here.
"""

from __future__ import annotations

from inference.narrative.character import (
    CHAT_MAX_TURNS,
    CHAT_MEMORY_CHARS,
    CHAT_RECENT_TURNS,
    MAX_REPLY_CHARS,
    PLAYER_SPEAKER,
    WORLD_NOTE,
    Character,
    Reply,
    character_greet,
    character_notice,
    character_remember,
    character_start,
    character_transcript,
    character_world,
)
from inference.narrative.grammar import (
    BEAT_BY_NAME,
    BEATS,
    INTENTS,
    REPLIES,
    REQUEST_CUE,
    REQUESTS,
    TONES,
    WORLD_INTENTS,
    character_reply,
    classify,
    requested_event,
    story_offer,
    tone,
    world_lines,
)
from inference.narrative.lines import MAX_LINE_CHARS, rolling_summary
from inference.narrative.state import begin, from_meta
from inference.narrative.story import (
    ChoiceError,
    Option,
    Story,
    choices_message,
    story_narrated,
    story_pick,
    story_start,
)
from inference.narrative.world_words import (
    EVENTS,
    Event,
    apply_to_description,
    changes_nothing,
    describe_place,
    time_of,
    told,
)

_tone = tone  # characters.py's name for it

__all__ = [
    "BEATS",
    "BEAT_BY_NAME",
    "CHAT_MAX_TURNS",
    "CHAT_MEMORY_CHARS",
    "CHAT_RECENT_TURNS",
    "EVENTS",
    "INTENTS",
    "MAX_LINE_CHARS",
    "MAX_REPLY_CHARS",
    "PLAYER_SPEAKER",
    "REPLIES",
    "REQUESTS",
    "REQUEST_CUE",
    "TONES",
    "WORLD_INTENTS",
    "WORLD_NOTE",
    "Character",
    "ChoiceError",
    "Event",
    "Option",
    "Reply",
    "Story",
    "apply_to_description",
    "begin",
    "changes_nothing",
    "character_greet",
    "character_notice",
    "character_remember",
    "character_reply",
    "character_start",
    "character_transcript",
    "character_world",
    "choices_message",
    "classify",
    "describe_place",
    "from_meta",
    "requested_event",
    "rolling_summary",
    "story_narrated",
    "story_offer",
    "story_pick",
    "story_start",
    "time_of",
    "told",
    "world_lines",
]
