"""A session as one worker holds it, and the cameras of the players seated in it.

The world itself lives in the engine (``world_id``; each camera's avatar is a ``player_id``
there); the story or character state in ``narrative``. A session has one camera per seated
player (slot 0 is whoever started it); each camera has its own held keys, frame buffer and
counters, so every player gets the frames of their own view. Only the worker's event-loop
thread changes these fields.
"""

import enum
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple


class SessionStatus(enum.Enum):
    STARTING = "starting"  # attach received, world being built or restored
    LIVE = "live"  # stepping every tick
    PAUSED = "paused"  # (a camera) its player detached: no frames made until they re-attach
    ENDED = "ended"


@dataclass
class Camera:
    """One seated player: their avatar in the world and the frames of their view."""

    session_id: str
    slot: int
    name: str = ""
    player_id: str = ""  # the avatar in the engine
    status: SessionStatus = SessionStatus.STARTING
    joined: int = 0  # arrival order, for first-come-first-served batches
    keys: frozenset = frozenset()  # held keys now (latest input)
    keys_seq: int = 0  # seq of the latest input
    stepped_keys: frozenset | None = None  # keys of the last step; None: next step is a cut
    applied_seq: int = 0  # last input seq whose effect is in the frames being shown
    state_seq: int = 0  # last input seq whose effect is in the world state (frames to come)
    events: deque = field(default_factory=deque)  # (seq, text) this player sent, not yet applied
    buffered: deque = field(default_factory=deque)  # (jpeg, seq, keys) frames made, not shown
    frame_no: int = 0  # frames sent so far (the next frame's number)
    restored: bool = False  # the next frame is the first after a restore
    frames_discarded: int = 0  # chunk frames generated but cut before being shown
    held_frames: int = 0  # frames made since the held keys last changed
    due: float = 0.0  # loop time when its next frame should go out
    live_since: float = 0.0  # loop time it went live (a fresh camera is not "late")
    last_jpeg: bytes = b""  # the last frame shown (the Live listing's thumbnail)


@dataclass
class Ballot:
    """The votes on the story pair on offer: players by slot, the audience by voter id."""

    choice_id: str = ""
    players: dict[int, int] = field(default_factory=dict)
    audience: dict[str, int] = field(default_factory=dict)
    closes_at: float | None = None  # loop time; set by the first player's vote

    def counts(self, votes: dict) -> list[int]:
        return [sum(1 for v in votes.values() if v == option) for option in (0, 1)]

    def winner(self) -> int:
        """Players' majority; a tie goes to the audience, then to the first vote cast."""
        players, audience = self.counts(self.players), self.counts(self.audience)
        if players[0] != players[1]:
            return 0 if players[0] > players[1] else 1
        if audience[0] != audience[1]:
            return 0 if audience[0] > audience[1] else 1
        return next(iter(self.players.values()), 0)


class Refusal(NamedTuple):
    """Why a player's message is refused: an error to the sender alone."""

    code: str
    message: str


EVENTS_REPLAYED = 12


@dataclass
class LiveSession:
    """One attached session's state on a worker (the world itself lives in the engine)."""

    session_id: str
    world_id: str = ""
    prompt: str = ""
    seed: int = 0
    world_title: str = ""
    status: SessionStatus = SessionStatus.STARTING
    cameras: dict[int, Camera] = field(default_factory=dict)  # slot -> camera
    last_snapshot: float = 0.0  # monotonic time of the last saved snapshot
    thumbnail_saved: bool = False  # the Live listing's thumbnail is saved (with the first frame)
    narrative: object = None  # inference.narrative Story or Character; None in other worlds
    narrator: str = ""  # which backend wrote its last story step or reply ("grammar", ...)
    ballot: Ballot = field(default_factory=Ballot)
    last_pick: str = ""  # the label of the option the last vote chose
    audience_tally_due: bool = False  # an audience vote's tally is waiting to go out
    # The last answers to world events (messages.Event), for a player seated again: the page's
    # events list is its own, and a reload emptied it.
    recent_events: deque = field(default_factory=lambda: deque(maxlen=EVENTS_REPLAYED))
    # Live-category worlds: where the world is kept between sessions ("" for other worlds).
    persist_key: str = ""
    recorder: object = None  # inference.serving.recording.Recorder; None: not recorded
    # A fork of a recording: (its store prefix, frame, slot of the camera) the world starts
    # from, with that camera's avatar as slot 0's; and the story then (a narrative's meta)
    fork: tuple | None = None
    fork_story: dict | None = None

    def live_cameras(self) -> list[Camera]:
        return [c for c in self.cameras.values() if c.status is SessionStatus.LIVE]

    def lead(self) -> Camera | None:
        """The camera spectators see: the lowest slot."""
        return self.cameras[min(self.cameras)] if self.cameras else None
