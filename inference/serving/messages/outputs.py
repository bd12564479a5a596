"""Worker → the session's group ``session_group(id)`` (and a camera's ``camera_group``), which
the player's and the spectators' consumers join."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from inference.serving.messages.wire import Message, _int, _opt_str, _slot, _str, _strs

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
