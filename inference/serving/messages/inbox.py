"""Web → worker: what ``sessions/worker_client.py`` sends to a worker's inbox
``worker_channel(name)``, and ``parse_inbox`` that reads it there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inference.serving.messages.wire import Message, _int, _opt_str, _slot, _str, _strs

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
