"""Protocol v1, client → server: parse and validate every message before anything acts on it.

Frames (server → client) are built on the worker (`inference/serving/frames.py`); this module only
guards the door. Every rule here answers with a `ProtocolError` carrying the `error` code the
client sees; `abuse=True` errors close the socket with a 4xxx code instead.
"""

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from inference.serving.messages import MAX_SAY_CHARS
from inference.world.spec import KEYS, MAX_PROMPT_CHARS

MAX_MESSAGE_BYTES = 4096
MAX_SEQ = 2**32 - 1  # echoed back as a u32 in the frame header
MAX_PING_T = 2**53  # a ping's timestamp: any number a browser clock gives, echoed back
# A token bucket (MessageRateLimiter): play sends ~4 messages a second with a key held, ~20 at
# its busiest. The burst is what a stalled web process reads at once when it wakes: everything the
# browser kept sending meanwhile (15 s of the busiest play).
RATE_LIMIT_PER_S = 60
RATE_LIMIT_BURST = 300

# WebSocket close codes (4000-4999 are the application's own).
CLOSE_NOT_FOUND = 4404
CLOSE_FORBIDDEN = 4403
CLOSE_REPLACED = 4409  # the player opened the session in another tab
CLOSE_ENDED = 4410
CLOSE_REMOVED = 4411  # the session's creator or a moderator removed this player
CLOSE_FLOODING = 4429


class ProtocolError(Exception):
    """``seq``: the prompt it answers, so the sender's client can mark that line."""

    def __init__(self, code: str, message: str, *, abuse: bool = False, seq: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.abuse = abuse
        self.seq = seq

    def as_message(self) -> dict:
        out = {"type": "error", "code": self.code, "message": self.message}
        return out if self.seq is None else {**out, "seq": self.seq}


@dataclass(frozen=True)
class Input:
    seq: int
    keys: frozenset[str]


@dataclass(frozen=True)
class Prompt:
    seq: int
    text: str


@dataclass(frozen=True)
class Choose:
    choice_id: str
    option: int


@dataclass(frozen=True)
class Vote:
    choice_id: str
    option: int


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class Ping:
    t: float


ClientMessage = Input | Prompt | Choose | Vote | Say | Ping


def parse_client_message(text: str | None, data: bytes | None = None) -> ClientMessage:
    """One WebSocket message (text or binary) → a typed message, or ProtocolError."""
    if data is not None:
        raise ProtocolError("bad_message", "Send JSON text messages; binary is not accepted.")
    if text is None:
        raise ProtocolError("bad_message", "Empty message.")
    if len(text) > MAX_MESSAGE_BYTES or len(text.encode("utf-8")) > MAX_MESSAGE_BYTES:
        raise ProtocolError("too_large", f"Messages are limited to {MAX_MESSAGE_BYTES} bytes.")
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        raise ProtocolError("bad_json", "The message is not valid JSON.") from None
    if not isinstance(body, dict):
        raise ProtocolError("bad_message", "A message is a JSON object with a type.")
    parser = _PARSERS.get(body.get("type")) if isinstance(body.get("type"), str) else None
    if parser is None:
        raise ProtocolError("unknown_type", f"Unknown message type {str(body.get('type'))[:40]!r}.")
    return parser(body)


def _seq(body: dict) -> int:
    seq = body.get("seq")
    # bool is an int in Python; a seq of `true` is still malformed.
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= MAX_SEQ:
        raise ProtocolError("bad_seq", f"seq must be an integer from 0 to {MAX_SEQ}.")
    return seq


def _input(body: dict) -> Input:
    keys = body.get("keys")
    if not isinstance(keys, list) or len(keys) > len(KEYS):
        raise ProtocolError("bad_keys", "keys must be a list of held keys.")
    if not all(isinstance(key, str) and key in KEYS for key in keys):
        raise ProtocolError("bad_keys", "keys may only hold w, a, s, d and space.")
    return Input(seq=_seq(body), keys=frozenset(keys))


def _unicode(value: object) -> bool:
    """A str that is real text: JSON's escapes can carry lone surrogates ("\\ud800"), which no
    encoder downstream (the text model, the channel layer's msgpack) accepts."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(body: dict, *, limit: int) -> str:
    text = body.get("text")
    if not _unicode(text) or not text.strip():
        raise ProtocolError("bad_text", "text must be a non-empty string.")
    if len(text) > limit:
        raise ProtocolError("too_long", f"Text is limited to {limit} characters.")
    return text.strip()


def _prompt(body: dict) -> Prompt:
    seq = _seq(body)
    return Prompt(seq=seq, text=_text(body, limit=MAX_PROMPT_CHARS))


def _pick(body: dict) -> tuple[str, int]:
    choice_id, option = body.get("choice_id"), body.get("option")
    if not _unicode(choice_id) or not 0 < len(choice_id) <= 64:
        raise ProtocolError("bad_choice", "choice_id must be a short string.")
    if not isinstance(option, int) or isinstance(option, bool) or option not in (0, 1):
        raise ProtocolError("bad_choice", "option must be 0 or 1.")
    return choice_id, option


def _choose(body: dict) -> Choose:
    return Choose(*_pick(body))


def _vote(body: dict) -> Vote:
    return Vote(*_pick(body))


def _say(body: dict) -> Say:
    return Say(text=_text(body, limit=MAX_SAY_CHARS))


def _ping(body: dict) -> Ping:
    t = body.get("t")
    # compared, not converted: a 300-digit integer overflows float(); NaN and inf compare false
    if not isinstance(t, int | float) or isinstance(t, bool) or not -MAX_PING_T <= t <= MAX_PING_T:
        raise ProtocolError("bad_ping", "t must be a number.")
    return Ping(t=t)


_PARSERS: dict[str, Callable[[dict], ClientMessage]] = {
    "input": _input,
    "prompt": _prompt,
    "choose": _choose,
    "vote": _vote,
    "say": _say,
    "ping": _ping,
}


class MessageRateLimiter:
    """Token bucket: ``rate`` messages a second sustained, ``burst`` at once. A sliding window of
    60 a second closed every player of a process that had stalled for a few seconds: what their
    browsers sent meanwhile arrived as one burst. Time passed in a stall refills the bucket, so a
    burst of normal play passes, while a flood outruns ``rate`` and empties it within seconds."""

    def __init__(
        self,
        *,
        rate: float = RATE_LIMIT_PER_S,
        burst: int = RATE_LIMIT_BURST,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def check(self) -> None:
        """Count one message; raise the abuse ProtocolError when the bucket is empty."""
        now = self.clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens < 1:
            raise ProtocolError(
                "rate_limited",
                f"More than {self.rate:g} messages per second.",
                abuse=True,
            )
        self._tokens -= 1
