"""The wire form every message shares: the base class, the channel and group names, and the
readers that turn the other process's fields into typed values (garbage into empty values)."""

from __future__ import annotations

from dataclasses import asdict
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


MAX_SLOTS = 64  # seat slots a message may name (the web side seats far fewer)


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
