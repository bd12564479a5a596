"""Web → the session's group: consumers telling each other about the session."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from inference.serving.messages.wire import Message, _int, _slot, _str


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
