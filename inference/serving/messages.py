"""Every message between the web side and the inference workers, each defined once.

Messages travel over the Channels layer as dicts with a dotted ``type`` (a consumer handles
``"session.frame"`` in ``session_frame``). Each one is a frozen dataclass here: ``to_message()``
is its channel-layer (JSON/msgpack) form and ``from_message(dict)`` reads one back. Readers
never trust the other process: a field of the wrong type becomes its empty value (an ``option``
that is not 0 or 1 becomes -1, which no story accepts), so garbage reaches no engine call.

Three directions, three sections:
- web → worker, sent to the worker's inbox ``worker_channel(name)`` (only
  ``sessions/worker_client.py`` sends them);
- worker → the session's group ``session_group(id)``, which the player's and the spectators'
  consumers join;
- web → the session's group (consumers telling each other about the session).
``sessions/README.md`` lists them with their JSON forms.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, ClassVar


def session_group(session_id) -> str:
    """Channel-layer group every consumer of one session joins; the worker sends to it."""
    return f"session.{session_id}"


def camera_group(session_id, slot: int) -> str:
    """The frames of one seated player's camera: their socket joins it, and the spectators
    join the lowest seated slot's."""
    return f"session.{session_id}.p{int(slot)}"


def worker_channel(name: str) -> str:
    """Inbox channel of one inference worker."""
    return f"worker.{name}"


class Message:
    """Base of every message: its ``TYPE`` and the dict form of its fields."""

    TYPE: ClassVar[str]

    def to_message(self) -> dict[str, Any]:
        return {"type": self.TYPE, **asdict(self)}  # type: ignore[call-overload]


def _int(value, default: int = 0) -> int:
    if isinstance(value, bool):
        return default
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


def _str(value) -> str:
    return value if isinstance(value, str) else ""


def _opt_str(value) -> str | None:
    return value if isinstance(value, str) else None


def _slot(value, default: int = 0) -> int:
    slot = _int(value, default)
    return slot if -1 <= slot < MAX_SLOTS else default


def _strs(value) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list | tuple) else ()


# --- web → worker ---------------------------------------------------------------------------

MAX_SAY_CHARS = 500  # a player's line to the character; the web side refuses longer ones first
MAX_SLOTS = 64  # seat slots a message may name (the web side seats far fewer)


@dataclass(frozen=True)
class CharacterCard:
    name: str = ""
    persona: str = ""
    greeting: str = ""
    examples: tuple[str, ...] = ()  # lines the creator wrote in the character's voice

    @classmethod
    def from_message(cls, body) -> CharacterCard | None:
        if not isinstance(body, dict):
            return None
        return cls(
            _str(body.get("name")),
            _str(body.get("persona")),
            _str(body.get("greeting")),
            _strs(body.get("examples")),
        )


@dataclass(frozen=True)
class Attach(Message):
    """Hold this session: build its world (or restore its snapshot) and stream its frames.

    The narrative fields come from the pinned world version and matter only for the
    ``stories`` / ``characters`` categories. Each seated player's socket sends it with its
    ``slot`` and ``name`` (slot -1: only the session, as failover sends it): the worker seats
    that player's avatar and camera, or resumes them on a reconnect. ``persist_key``: a Live
    world's place in the world store (it starts from the kept world and is kept at its end)."""

    TYPE = "session.attach"
    session_id: str
    prompt: str = ""
    seed: int = 0
    world_title: str = ""
    restore: bool = False
    category: str = ""
    story_opening: str = ""
    character: CharacterCard | None = None
    slot: int = -1
    name: str = ""
    persist_key: str = ""
    # a fork: the recording's store prefix, and the frame and camera (slot) it starts from
    fork_key: str = ""
    fork_frame: int = 0
    fork_slot: int = 0

    @classmethod
    def from_message(cls, body: dict) -> Attach:
        return cls(
            session_id=_str(body.get("session_id")),
            prompt=_str(body.get("prompt")),
            seed=_int(body.get("seed")),
            world_title=_str(body.get("world_title")),
            restore=body.get("restore") is True,
            category=_str(body.get("category")),
            story_opening=_str(body.get("story_opening")),
            character=CharacterCard.from_message(body.get("character")),
            slot=_slot(body.get("slot"), default=-1),
            name=_str(body.get("name"))[:40],
            persist_key=_str(body.get("persist_key")),
            fork_key=_str(body.get("fork_key")),
            fork_frame=_int(body.get("fork_frame")),
            fork_slot=_slot(body.get("fork_slot"), default=0),
        )


@dataclass(frozen=True)
class Input(Message):
    """The keys held now (already validated by the web side)."""

    TYPE = "session.input"
    session_id: str
    seq: int
    keys: tuple[str, ...]
    slot: int = 0  # whose camera

    def to_message(self) -> dict[str, Any]:
        return {"type": self.TYPE, "session_id": self.session_id, "seq": self.seq,
                "keys": list(self.keys), "slot": self.slot}  # fmt: skip

    @classmethod
    def from_message(cls, body: dict) -> Input:
        return cls(
            _str(body.get("session_id")),
            _int(body.get("seq")),
            _strs(body.get("keys")),
            _slot(body.get("slot")),
        )


@dataclass(frozen=True)
class Prompt(Message):
    """A world event, already screened and length-checked. ``text`` None: not a string."""

    TYPE = "session.prompt"
    session_id: str
    seq: int
    text: str | None
    slot: int = 0  # who sent it (the event happens around their avatar)

    @classmethod
    def from_message(cls, body: dict) -> Prompt:
        return cls(
            _str(body.get("session_id")),
            _int(body.get("seq")),
            _opt_str(body.get("text")),
            _slot(body.get("slot")),
        )


@dataclass(frozen=True)
class Choose(Message):
    """A seated player's vote on the story pair (story worlds only; alone, it is the pick)."""

    TYPE = "session.choose"
    session_id: str
    choice_id: str
    option: int
    slot: int = 0

    @classmethod
    def from_message(cls, body: dict) -> Choose:
        return cls(
            _str(body.get("session_id")),
            _str(body.get("choice_id")),
            _option(body.get("option")),
            _slot(body.get("slot")),
        )


def _option(value) -> int:
    return value if value in (0, 1) and not isinstance(value, bool) else -1


@dataclass(frozen=True)
class Vote(Message):
    """A spectator's vote on the story pair: counted apart, as the audience (``voter``: who,
    so a second vote replaces the first)."""

    TYPE = "session.vote"
    session_id: str
    voter: str
    choice_id: str
    option: int

    @classmethod
    def from_message(cls, body: dict) -> Vote:
        return cls(
            _str(body.get("session_id")),
            _str(body.get("voter"))[:100],
            _str(body.get("choice_id")),
            _option(body.get("option")),
        )


@dataclass(frozen=True)
class Say(Message):
    """A player's line to the world's character, screened like a prompt. ``refused``: screening
    held the line back; its words stay on the web side (``text`` None) and the character
    answers with a refusal in its own voice."""

    TYPE = "session.say"
    session_id: str
    text: str | None
    slot: int = 0
    refused: bool = False

    @classmethod
    def from_message(cls, body: dict) -> Say:
        refused = body.get("refused") is True
        return cls(
            _str(body.get("session_id")),
            None if refused else _opt_str(body.get("text")),
            _slot(body.get("slot")),
            refused,
        )


@dataclass(frozen=True)
class Watch(Message):
    """A spectator's socket connected: the worker sends the talk so far and the last answers to
    world events to that ``channel`` alone (a player seated again gets them through their seat,
    see ``Line`` and ``Event``)."""

    TYPE = "session.watch"
    session_id: str
    channel: str

    @classmethod
    def from_message(cls, body: dict) -> Watch:
        return cls(_str(body.get("session_id")), _str(body.get("channel"))[:200])


@dataclass(frozen=True)
class Detach(Message):
    """A player's socket closed: pause their camera for the reconnect grace."""

    TYPE = "session.detach"
    session_id: str
    slot: int = 0

    @classmethod
    def from_message(cls, body: dict) -> Detach:
        return cls(_str(body.get("session_id")), _slot(body.get("slot")))


@dataclass(frozen=True)
class Unseat(Message):
    """A player left their seat (or was removed): their avatar and camera go; the world and
    everyone else play on."""

    TYPE = "session.unseat"
    session_id: str
    slot: int

    @classmethod
    def from_message(cls, body: dict) -> Unseat:
        return cls(_str(body.get("session_id")), _slot(body.get("slot"), default=-1))


@dataclass(frozen=True)
class End(Message):
    """The web side ended the session: drop it (its clients have been told)."""

    TYPE = "session.end"
    session_id: str
    reason: str = "ended"

    @classmethod
    def from_message(cls, body: dict) -> End:
        return cls(_str(body.get("session_id")), _str(body.get("reason")) or "ended")


@dataclass(frozen=True)
class Probe(Message):
    """A worker's message to its own inbox: once it comes back, the inbox is listening."""

    TYPE = "worker.probe"
    nonce: str

    @classmethod
    def from_message(cls, body: dict) -> Probe:
        return cls(_str(body.get("nonce")))


InboxMessage = Attach | Input | Prompt | Choose | Vote | Say | Watch | Detach | Unseat | End | Probe
_INBOX: dict[str, type] = {
    m.TYPE: m for m in (Attach, Input, Prompt, Choose, Vote, Say, Watch, Detach, Unseat, End, Probe)
}


class UnknownMessage(ValueError):
    pass


def parse_inbox(body) -> InboxMessage:
    """A worker's inbox dict → its typed message; UnknownMessage for anything else."""
    kind = body.get("type") if isinstance(body, dict) else None
    cls = _INBOX.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise UnknownMessage(f"unknown message type {str(kind)[:40]!r}")
    return cls.from_message(body)


# --- worker → the session's group -------------------------------------------------------------

# Why a worker ended a session on its own (the web side records these as failures).
WORKER_FAILURES = frozenset({"bad_world", "worker_error", "snapshot_lost", "worker_full"})


@dataclass(frozen=True)
class Frame(Message):
    """One frame: the 12-byte protocol v1 header and a JPEG (``inference.serving.frames``),
    and ``sent``, the worker's wall clock when it left (a socket drops frames gone stale on
    the way: ``sessions.frame_lag``)."""

    TYPE = "session.frame"
    data: bytes
    sent: float | None = None

    def to_message(self) -> dict[str, Any]:
        # the frame path: no asdict() per frame
        return {"type": self.TYPE, "data": self.data, "sent": self.sent}

    @classmethod
    def from_message(cls, body: dict) -> Frame:
        sent = body.get("sent")
        data = body.get("data")
        return cls(
            data=data if isinstance(data, bytes) else b"",
            sent=float(sent)
            if isinstance(sent, int | float) and not isinstance(sent, bool)
            else None,
        )


@dataclass(frozen=True)
class Status(Message):
    """``state``: starting | live | resuming | ended. ``worker``: who holds the session now
    (on ``resuming``, the new one). ``reason``: why it ended (a worker failure code, an end
    reason, or a moderator's words)."""

    TYPE = "session.status"
    state: str
    fps: float = 0.0
    reason: str | None = None
    worker: str | None = None
    narrator: str | None = None  # who wrote the last story step or reply ("grammar", ...)

    @classmethod
    def from_message(cls, body: dict) -> Status:
        fps = body.get("fps")
        return cls(
            state=_str(body.get("state")),
            fps=float(fps) if isinstance(fps, int | float) and not isinstance(fps, bool) else 0.0,
            reason=_opt_str(body.get("reason")),
            worker=_opt_str(body.get("worker")),
            narrator=_opt_str(body.get("narrator")),
        )


@dataclass(frozen=True)
class Event(Message):
    """The answer to a text event, to everyone in the session: ``applied``; ``unsupported``
    (the model cannot do it; ``suggest`` says what it can) or ``rejected`` (moderation) with a
    reason. ``seq`` is the sender's (``slot``, ``by``: who sent it)."""

    TYPE = "session.event"
    seq: int
    status: str
    reason: str | None = None
    by: str = ""
    slot: int = 0
    suggest: tuple[str, ...] = ()
    text: str = ""  # what they typed (screened before it reached the world)
    # The last answers replayed to one seat that (re)joined, as ``Line``'s talk so far.
    history: int = -1
    only_slot: int = -1

    def to_message(self) -> dict[str, Any]:
        body = {**super().to_message(), "suggest": list(self.suggest)}
        if self.history < 0:  # an answer now: the form clients were built for
            del body["history"], body["only_slot"]
        return body

    @classmethod
    def from_message(cls, body: dict) -> Event:
        return cls(
            _int(body.get("seq")),
            _str(body.get("status")),
            _opt_str(body.get("reason")),
            _str(body.get("by")),
            _slot(body.get("slot")),
            _strs(body.get("suggest")),
            _str(body.get("text"))[:500],
            _int(body.get("history"), default=-1),
            _slot(body.get("only_slot"), default=-1),
        )


@dataclass(frozen=True)
class Choices(Message):
    """The pair of story options on offer, the story so far (the opening first) with the option
    picked before each line ("" for the opening), and the votes: players' and the audience's per
    option, and seconds until the vote closes (None: nobody has voted yet)."""

    TYPE = "session.choices"
    choice_id: str
    options: tuple[str, ...]
    story: tuple[str, ...] = ()
    votes: tuple[int, int] = (0, 0)
    audience: tuple[int, int] = (0, 0)
    closes_in: float | None = None
    picked: str = ""  # the option the last vote chose
    chosen: tuple[str, ...] = ()  # aligned with `story`

    def to_message(self) -> dict[str, Any]:
        return {"type": self.TYPE, "choice_id": self.choice_id, "options": list(self.options),
                "story": list(self.story), "votes": list(self.votes),
                "audience": list(self.audience), "closes_in": self.closes_in,
                "picked": self.picked, "chosen": list(self.chosen)}  # fmt: skip

    @classmethod
    def from_message(cls, body: dict) -> Choices:
        closes = body.get("closes_in")
        return cls(
            _str(body.get("choice_id")),
            _strs(body.get("options")),
            _strs(body.get("story")),
            _pair(body.get("votes")),
            _pair(body.get("audience")),
            _opt_float(closes),
            _str(body.get("picked")),
            _strs(body.get("chosen")),
        )


def _opt_float(value) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _pair(value) -> tuple[int, int]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        return (0, 0)
    return (max(0, _int(value[0])), max(0, _int(value[1])))


@dataclass(frozen=True)
class Line(Message):
    """A line of dialogue: a player's (``slot`` >= 0, ``speaker`` their name) or the
    character's (``slot`` -1). ``partial``: the character's reply so far, while it is generated
    (each one replaces the last; the final line, without ``partial``, replaces them all)."""

    TYPE = "session.say"
    speaker: str
    text: str
    partial: bool = False
    slot: int = -1
    # The talk so far, replayed to one seat that (re)joined (or to a spectator's channel alone):
    # ``history`` is the line's place in it (-1: a line said now), ``only_slot`` the seat it is
    # for (-1: everyone).
    history: int = -1
    only_slot: int = -1

    @classmethod
    def from_message(cls, body: dict) -> Line:
        return cls(
            _str(body.get("speaker")),
            _str(body.get("text")),
            body.get("partial") is True,
            _slot(body.get("slot"), default=-1),
            _int(body.get("history"), default=-1),
            _slot(body.get("only_slot"), default=-1),
        )


@dataclass(frozen=True)
class Error(Message):
    """An answer to one player's own pick, line or prompt (only that player's consumer forwards
    it); ``seq``: the prompt's, or -1."""

    TYPE = "session.error"
    code: str
    message: str
    slot: int = 0
    seq: int = -1

    @classmethod
    def from_message(cls, body: dict) -> Error:
        return cls(
            _str(body.get("code")),
            _str(body.get("message")),
            _slot(body.get("slot")),
            _int(body.get("seq"), default=-1),
        )


# --- web → the session's group ----------------------------------------------------------------


@dataclass(frozen=True)
class Placed(Message):
    """A queued session got a slot: its player's consumer attaches it to ``worker``."""

    TYPE = "session.placed"
    worker: str

    @classmethod
    def from_message(cls, body: dict) -> Placed:
        return cls(_str(body.get("worker")))


@dataclass(frozen=True)
class Player(Message):
    """A player's socket connected; any older socket of the same seat steps aside."""

    TYPE = "session.player"
    channel: str
    slot: int = 0

    @classmethod
    def from_message(cls, body: dict) -> Player:
        return cls(_str(body.get("channel")), _slot(body.get("slot")))


# A seat's socket: open, not opened yet, or closed within the reconnect grace (seat kept).
SEAT_STATES = ("connected", "joining", "reconnecting")


@dataclass(frozen=True)
class SeatInfo:
    slot: int
    name: str
    color: str
    state: str = "connected"  # one of SEAT_STATES


@dataclass(frozen=True)
class Presence(Message):
    """Who is seated now and whether their socket is on (sent on every join, leave, connect
    and close); each consumer marks its own ``you``."""

    TYPE = "session.presence"
    players: tuple[SeatInfo, ...]

    def to_message(self) -> dict[str, Any]:
        return {"type": self.TYPE, "players": [asdict(p) for p in self.players]}

    @classmethod
    def from_message(cls, body: dict) -> Presence:
        raw = body.get("players")
        players = [p for p in raw if isinstance(p, dict)] if isinstance(raw, list) else []
        return cls(
            tuple(
                SeatInfo(
                    _slot(p.get("slot")),
                    _str(p.get("name")),
                    _str(p.get("color")),
                    p.get("state") if p.get("state") in SEAT_STATES else "connected",
                )
                for p in players
            )
        )


@dataclass(frozen=True)
class Removed(Message):
    """A player was removed (by the session's creator or a moderator): their socket closes."""

    TYPE = "session.removed"
    slot: int
    reason: str

    @classmethod
    def from_message(cls, body: dict) -> Removed:
        return cls(_slot(body.get("slot"), default=-1), _str(body.get("reason")))


@dataclass(frozen=True)
class Viewers(Message):
    """The number of spectators now."""

    TYPE = "session.viewers"
    viewers: int

    @classmethod
    def from_message(cls, body: dict) -> Viewers:
        return cls(max(0, _int(body.get("viewers"))))
