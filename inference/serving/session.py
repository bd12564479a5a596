"""A session as one worker holds it: its status, held keys, queued events and frame buffer.

The world itself lives in the engine (``world_id``, ``player_id``); the story or character state
in ``narrative``. Only the worker's event-loop thread changes these fields.
"""

import enum
from collections import deque
from dataclasses import dataclass, field


class SessionStatus(enum.Enum):
    STARTING = "starting"  # attach received, world being built or restored
    LIVE = "live"  # stepping every tick
    PAUSED = "paused"  # player detached: state kept, no frames made until re-attach
    ENDED = "ended"


@dataclass
class LiveSession:
    """One attached session's state on a worker (the world itself lives in the engine)."""

    session_id: str
    player_id: str = ""
    world_id: str = ""
    prompt: str = ""
    seed: int = 0
    world_title: str = ""
    status: SessionStatus = SessionStatus.STARTING
    joined: int = 0  # arrival order, for first-come-first-served batches
    keys: frozenset = frozenset()  # held keys now (latest input)
    keys_seq: int = 0  # seq of the latest input
    stepped_keys: frozenset | None = None  # keys of the last step; None: next step is a cut
    applied_seq: int = 0  # last input seq whose effect is in the frames being shown
    state_seq: int = 0  # last input seq whose effect is in the world state (frames to come)
    events: deque = field(default_factory=deque)  # (seq, text) waiting for the next step
    buffered: deque = field(default_factory=deque)  # (jpeg, seq, keys) frames made, not shown
    frame_no: int = 0  # frames sent so far (the next frame's number)
    restored: bool = False  # the next frame is the first after a restore
    last_snapshot: float = 0.0  # monotonic time of the last saved snapshot
    frames_discarded: int = 0  # chunk frames generated but cut before being shown
    held_frames: int = 0  # frames made since the held keys last changed
    due: float = 0.0  # loop time when its next frame should go out
    live_since: float = 0.0  # loop time it went live (a fresh session is not "late")
    narrative: object = None  # inference.narrative.engine Story or Character; None in other worlds
    narrator: str = ""  # which backend wrote its last story step or reply ("grammar", ...)
