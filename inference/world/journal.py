"""A world's journal: every change the engine made to one world, in the order it made them.

A world's state after its journal is a function of the state before and the journal alone:
nothing in it depends on timing, threads or the other worlds of a batch. Terrain is journaled
as the chunks the generator made (the terrain thread grows them whenever it gets to them, and a
chunk depends on its neighbours at that moment); a text event as what the reader made of it
(the kinds and the concepts, not the text); a step as who moved which way for how many frames
and which frames a player was held at the edge of late terrain. So a snapshot and the journal
after it make the same states, and the renderer the same frames, byte for byte, given the same
weights (`WorldEngine.replay_op`). Recordings are made of them (`inference.serving.recording`).

Entries are plain tuples (cheap to make on the frame path) with a JSON form for storage.
"""

from __future__ import annotations

import base64
from typing import NamedTuple


class Chunk(NamedTuple):
    cx: int
    cy: int
    tokens: bytes  # CHUNK x CHUNK uint8


class Join(NamedTuple):
    player_id: str
    slot: int


class Leave(NamedTuple):
    player_id: str


class Change(NamedTuple):
    """A text event as read: each kind an index (-1: unchanged), the things by concept name."""

    weather: int
    time: int
    creature: int
    thing: int
    objects: tuple[str, ...]
    near: str  # the player it happened beside ("" : the first)
    process: int = -1  # a process it starts (index into spec.PROCESSES)


class Advance(NamedTuple):
    """One step of a world: (player id, dx, dy, frames) per moving player, and (frame, player
    id) for each frame a player was held at the edge of late terrain."""

    moves: tuple[tuple[str, int, int, int], ...]
    held: tuple[tuple[int, str], ...] = ()


Entry = Chunk | Join | Leave | Change | Advance
KINDS: dict[str, type] = {"chunk": Chunk, "join": Join, "leave": Leave, "change": Change,
                          "advance": Advance}  # fmt: skip
_NAMES = {kind: name for name, kind in KINDS.items()}


class JournalError(ValueError):
    pass


def to_json(entry: Entry) -> list:
    name = _NAMES[type(entry)]
    if isinstance(entry, Chunk):
        return [name, entry.cx, entry.cy, base64.b64encode(entry.tokens).decode()]
    if isinstance(entry, Change):
        return [name, *entry[:4], list(entry.objects), entry.near, entry.process]
    if isinstance(entry, Advance):
        return [name, [list(m) for m in entry.moves], [list(h) for h in entry.held]]
    return [name, *entry]


def from_json(item) -> Entry:
    """One stored entry back; JournalError for anything that is not one."""
    try:
        kind, *fields = item
        cls = KINDS[kind]
        if cls is Chunk:
            return Chunk(int(fields[0]), int(fields[1]), base64.b64decode(fields[2]))
        if cls is Change:
            if len(fields) == 6:  # recorded before processes
                fields = [*fields, -1]
            *kinds, objects, near, process = fields
            return Change(
                *(int(k) for k in kinds), tuple(str(o) for o in objects), str(near), int(process)
            )
        if cls is Advance:
            moves = tuple((str(p), int(dx), int(dy), int(n)) for p, dx, dy, n in fields[0])
            return Advance(moves, tuple((int(i), str(p)) for i, p in fields[1]))
        if cls is Join:
            return Join(str(fields[0]), int(fields[1]))
        return Leave(str(fields[0]))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise JournalError(f"not a journal entry: {exc}") from None
