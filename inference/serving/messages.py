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

from dataclasses import asdict, dataclass
from typing import Any, ClassVar


def session_group(session_id) -> str:
    """Channel-layer group every consumer of one session joins; the worker sends to it."""
    return f"session.{session_id}"


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


def _strs(value) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list | tuple) else ()


# --- web → worker ---------------------------------------------------------------------------

MAX_SAY_CHARS = 500  # a player's line to the character; the web side refuses longer ones first


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
    ``stories`` / ``characters`` categories. Sent again on a reconnect: the worker resumes it."""

    TYPE = "session.attach"
    session_id: str
    prompt: str = ""
    seed: int = 0
    world_title: str = ""
    restore: bool = False
    category: str = ""
    story_opening: str = ""
    character: CharacterCard | None = None

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
        )


@dataclass(frozen=True)
class Input(Message):
    """The keys held now (already validated by the web side)."""

    TYPE = "session.input"
    session_id: str
    seq: int
    keys: tuple[str, ...]

    def to_message(self) -> dict[str, Any]:
        return {"type": self.TYPE, "session_id": self.session_id, "seq": self.seq,
                "keys": list(self.keys)}  # fmt: skip

    @classmethod
    def from_message(cls, body: dict) -> Input:
        return cls(_str(body.get("session_id")), _int(body.get("seq")), _strs(body.get("keys")))


@dataclass(frozen=True)
class Prompt(Message):
    """A world event, already screened and length-checked. ``text`` None: not a string."""

    TYPE = "session.prompt"
    session_id: str
    seq: int
    text: str | None

    @classmethod
    def from_message(cls, body: dict) -> Prompt:
        return cls(_str(body.get("session_id")), _int(body.get("seq")), _opt_str(body.get("text")))


@dataclass(frozen=True)
class Choose(Message):
    """A story pick (story worlds only)."""

    TYPE = "session.choose"
    session_id: str
    choice_id: str
    option: int

    @classmethod
    def from_message(cls, body: dict) -> Choose:
        option = body.get("option")
        return cls(
            _str(body.get("session_id")),
            _str(body.get("choice_id")),
            option if option in (0, 1) and not isinstance(option, bool) else -1,
        )


@dataclass(frozen=True)
class Say(Message):
    """A player's line to the world's character, screened like a prompt."""

    TYPE = "session.say"
    session_id: str
    text: str | None

    @classmethod
    def from_message(cls, body: dict) -> Say:
        return cls(_str(body.get("session_id")), _opt_str(body.get("text")))


@dataclass(frozen=True)
class Detach(Message):
    """The player's socket closed: pause the session for the reconnect grace."""

    TYPE = "session.detach"
    session_id: str

    @classmethod
    def from_message(cls, body: dict) -> Detach:
        return cls(_str(body.get("session_id")))


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


InboxMessage = Attach | Input | Prompt | Choose | Say | Detach | End | Probe
_INBOX: dict[str, type] = {
    m.TYPE: m for m in (Attach, Input, Prompt, Choose, Say, Detach, End, Probe)
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
    """One frame: the 12-byte protocol v1 header and a JPEG (``inference.serving.frames``)."""

    TYPE = "session.frame"
    data: bytes

    def to_message(self) -> dict[str, Any]:
        return {"type": self.TYPE, "data": self.data}  # the frame path: no asdict() per frame


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
    """The answer to a text event: applied, or rejected with a reason."""

    TYPE = "session.event"
    seq: int
    status: str
    reason: str | None = None

    @classmethod
    def from_message(cls, body: dict) -> Event:
        return cls(_int(body.get("seq")), _str(body.get("status")), _opt_str(body.get("reason")))


@dataclass(frozen=True)
class Choices(Message):
    """The pair of story options on offer and the story so far (the opening first)."""

    TYPE = "session.choices"
    choice_id: str
    options: tuple[str, ...]
    story: tuple[str, ...] = ()

    def to_message(self) -> dict[str, Any]:
        return {"type": self.TYPE, "choice_id": self.choice_id, "options": list(self.options),
                "story": list(self.story)}  # fmt: skip

    @classmethod
    def from_message(cls, body: dict) -> Choices:
        return cls(
            _str(body.get("choice_id")), _strs(body.get("options")), _strs(body.get("story"))
        )


@dataclass(frozen=True)
class Line(Message):
    """A line of dialogue: the player's own (speaker "you") or the character's. ``partial``:
    the character's reply so far, while it is generated (each one replaces the last; the final
    line, without ``partial``, replaces them all)."""

    TYPE = "session.say"
    speaker: str
    text: str
    partial: bool = False

    @classmethod
    def from_message(cls, body: dict) -> Line:
        return cls(_str(body.get("speaker")), _str(body.get("text")), body.get("partial") is True)


@dataclass(frozen=True)
class Error(Message):
    """An answer to the player's own pick or line (only the player's consumer forwards it)."""

    TYPE = "session.error"
    code: str
    message: str

    @classmethod
    def from_message(cls, body: dict) -> Error:
        return cls(_str(body.get("code")), _str(body.get("message")))


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
    """A player socket connected; any other player socket of the session steps aside."""

    TYPE = "session.player"
    channel: str

    @classmethod
    def from_message(cls, body: dict) -> Player:
        return cls(_str(body.get("channel")))


@dataclass(frozen=True)
class Viewers(Message):
    """The number of spectators now."""

    TYPE = "session.viewers"
    viewers: int

    @classmethod
    def from_message(cls, body: dict) -> Viewers:
        return cls(max(0, _int(body.get("viewers"))))
