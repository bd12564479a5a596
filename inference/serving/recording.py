"""A session's recording, and playing it again.

The worker records each session as it runs (`Recorder`) and writes it to the media store in
parts, every few seconds and when the session ends, so a crash loses little. A part is
``MAGIC`` + zlib(JSON): the session, the weights that drew it, the frame rate, and entries in
the order they happened:

- ``segment``: a world snapshot where the recording (re)starts: the session's start, or a
  restore after a failover (the world went back to its last snapshot, as its players saw);
- ``world``: an entry of the world's journal (`inference.world.journal`): terrain made, players
  joining and leaving, text events as read, steps;
- ``drop``: frames a camera made and never showed (a cut gave them up for fresher ones);
- ``checkpoint``: a snapshot now and then, where a fork or a seek can start;
- ``event``/``pick``/``say``/``story``: what players typed and picked and what the language
  model wrote (text: it is not reproducible), for the replay's marks and a fork's story;
- ``end``: the frames each camera showed.

Given the same weights, the world's snapshots and journal give the live frames byte for byte
(`Replay`). This module reads recordings without torch or Django (the web side lists their
frames and marks); replaying takes an engine (``WorldEngine.replayer()``).
"""

from __future__ import annotations

import base64
import json
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from inference.world import journal as jn

MAGIC = b"PXRC"
FORMAT = 1
PREFIX = "recordings"
FLUSH_EVERY_S = 5.0
CHECKPOINT_EVERY_S = 60.0
MAX_PART_BYTES = 32 * 1024 * 1024  # unpacked; a part of a few seconds is tens of KB
DROP_WINDOW = 256  # frames a camera keeps unsent at most (a drop reaches back this far)
MARKS = ("event", "pick", "say")


class RecordingError(ValueError):
    pass


def part_key(session_id: str, name: str) -> str:
    return f"{PREFIX}/{session_id}/{name}.pxr"


def pack_part(header: dict, entries: list) -> bytes:
    body = json.dumps({"format": FORMAT, **header, "entries": entries}, separators=(",", ":"))
    return MAGIC + zlib.compress(body.encode(), 6)


def unpack_part(data: bytes) -> dict:
    if not isinstance(data, bytes | bytearray) or data[:4] != MAGIC:
        raise RecordingError("not a Parallax recording")
    try:
        inflate = zlib.decompressobj()
        body = inflate.decompress(bytes(data[4:]), MAX_PART_BYTES)
        if inflate.unconsumed_tail:
            raise RecordingError("recording part too large")
        part = json.loads(body)
    except (zlib.error, ValueError) as exc:
        raise RecordingError(f"unreadable recording part: {exc}") from None
    if not isinstance(part, dict) or part.get("format") != FORMAT:
        raise RecordingError("unknown recording format")
    if not isinstance(part.get("entries"), list):
        raise RecordingError("recording part without entries")
    return part


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class Recorder:
    """One session's recording on its worker: entries since the last part, and the next part.

    The engine thread adds the world's segments and journal, the loop thread the rest; each
    part goes to the store as it is taken (`take`), so only the entries since the last one
    are held here."""

    def __init__(self, session_id: str, *, worker: str, weights: str, fps: float) -> None:
        self.session_id = session_id
        self.header = {"session_id": session_id, "worker": worker, "weights": weights, "fps": fps}
        self.entries: list = []
        self.parts = 0
        self.size = 0  # bytes stored so far
        self.last_part = 0.0  # loop time
        self.last_checkpoint = 0.0
        self.ended = False
        self._shown_at_segment: dict[int, int] = {}  # slot -> frames sent when it began
        self.lock = threading.Lock()  # see EngineCore.note

    def segment(
        self, snapshot: bytes, frames: dict[str, int], cameras: dict[str, int], shown: dict
    ) -> None:
        """The world as the recording (re)starts: its snapshot, the frames each camera's
        player had made, player id -> slot, and slot -> frames the camera had sent."""
        self.entries.append(["segment", _b64(snapshot), frames, cameras])
        self._shown_at_segment = {int(k): int(v) for k, v in shown.items()}

    def end(self, shown: dict[int, int]) -> None:
        """The frames each camera (slot) sent in all: the replay stops where they did."""
        start = self._shown_at_segment
        self.entries.append(["end", {str(s): n - start.get(s, 0) for s, n in shown.items()}])

    def checkpoint(self, snapshot: bytes, frames: dict[str, int], now: float) -> None:
        self.last_checkpoint = now
        self.entries.append(["checkpoint", _b64(snapshot), frames])

    def world(self, entries: list[jn.Entry]) -> None:
        self.entries.extend(["world", jn.to_json(e)] for e in entries)

    def note(self, kind: str, *fields) -> None:
        self.entries.append([kind, *fields])

    def due(self, now: float) -> bool:
        return bool(self.entries) and now - self.last_part >= FLUSH_EVERY_S

    def take(self, now: float, *, final: bool = False) -> tuple[str, bytes]:
        """-> (store key, bytes) of the next part: every entry since the last one."""
        self.last_part = now
        entries, self.entries = self.entries, []
        data = pack_part({**self.header, "part": self.parts, "final": final}, entries)
        # sortable across workers: a failover's parts come after the first worker's
        name = f"{int(now * 1000):014d}-{self.parts:05d}-{self.header['worker'][:40]}"
        self.parts += 1
        self.size += len(data)
        self.ended |= final
        return part_key(self.session_id, "".join(c if c.isalnum() else "-" for c in name)), data


@dataclass
class Camera:
    slot: int
    frames: int = 0  # frames it showed (a replay's frame numbers)


@dataclass
class Recording:
    """A recording read back: its entries in order, and what they add up to."""

    session_id: str
    weights: str
    fps: float
    entries: list
    cameras: dict[int, Camera] = field(default_factory=dict)  # slot -> camera
    marks: list[dict] = field(default_factory=list)  # {frame (lead's), kind, text, by}
    complete: bool = False  # its final part is there

    @property
    def frames(self) -> int:
        """The lead camera's frames (what spectators saw)."""
        return self.cameras[self.lead].frames if self.cameras else 0

    @property
    def lead(self) -> int:
        return min(self.cameras) if self.cameras else 0

    @property
    def duration_s(self) -> float:
        return self.frames / self.fps if self.fps > 0 else 0.0


def read_recording(parts: list[bytes]) -> Recording:
    """Parts (in their store order) -> a `Recording` with its frame counts and marks, counted
    without replaying (a step's frames are in its journal entry)."""
    if not parts:
        raise RecordingError("no recording parts")
    unpacked = [unpack_part(p) for p in parts]
    first = unpacked[0]
    entries = [e for p in unpacked for e in p["entries"]]
    rec = Recording(
        session_id=str(first.get("session_id", "")),
        weights=str(first.get("weights", "")),
        fps=float(first.get("fps") or 0.0),
        entries=entries,
        complete=bool(unpacked[-1].get("final")) and _contiguous(unpacked),
    )
    if not entries or entries[0][0] != "segment":
        raise RecordingError("a recording starts with its world")
    counter = _Counter()
    for entry in entries:
        counter.feed(entry)
        if entry[0] in MARKS:
            lead = counter.frames.get(min(counter.frames, default=0), 0)
            rec.marks.append({"frame": lead, "kind": entry[0], "text": str(entry[-1])[:500],
                              "by": str(entry[1]) if len(entry) > 2 else ""})  # fmt: skip
    rec.cameras = {slot: Camera(slot, n) for slot, n in counter.frames.items()}
    return rec


def _contiguous(unpacked: list[dict]) -> bool:
    """Whether every worker's parts are all there, numbered 0, 1, 2...: parts are stored from
    threads of their own, so the last one can land before the one before it, and a recording
    read then is not yet complete (read again later, it is)."""
    numbers: dict[str, list] = {}
    for part in unpacked:
        numbers.setdefault(str(part.get("worker", "")), []).append(part.get("part"))
    try:
        return all(sorted(n) == list(range(len(n))) for n in numbers.values())
    except TypeError:  # a part without its number
        return False


class _Counter:
    """Frames each camera (slot) has shown at each point of a recording, without rendering."""

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}  # player id -> slot
        self.frames: dict[int, int] = {}  # slot -> frames so far (drops taken off)
        self.base: dict[int, int] = {}  # slot -> frames before this segment
        self.ended: dict[int, int] | None = None

    def feed(self, entry: list) -> None:
        kind = entry[0]
        if kind == "segment":
            self.slots = {str(p): int(s) for p, s in entry[3].items()}
            self.base = dict(self.frames)
            for slot in self.slots.values():
                self.frames.setdefault(slot, 0)
        elif kind == "world":
            item = jn.from_json(entry[1])
            if isinstance(item, jn.Join):
                self.slots[item.player_id] = item.slot
                self.frames.setdefault(item.slot, 0)
            elif isinstance(item, jn.Advance):
                for pid, _, _, n in item.moves:
                    slot = self.slots.get(pid)
                    if slot is not None:
                        self.frames[slot] = self.frames.get(slot, 0) + n
        elif kind == "drop":
            slot = int(entry[1])
            self.frames[slot] = max(0, self.frames.get(slot, 0) - int(entry[2]))
        elif kind == "end":
            # what each camera showed: frames made ahead and never sent are not the run
            for slot, shown in entry[1].items():
                slot = int(slot)
                if slot in self.frames:
                    self.frames[slot] = min(self.frames[slot], self.base.get(slot, 0) + int(shown))


class Replay:
    """Plays a recording on an engine made by ``WorldEngine.replayer()``."""

    def __init__(self, engine, recording: Recording) -> None:
        self.engine = engine
        self.recording = recording
        self._world = ""
        self._slots: dict[str, int] = {}  # player id -> slot

    def frames(self, slot: int | None = None) -> Iterator[np.ndarray]:
        """Every frame one camera (default: the lead's) showed, in order, as RGB arrays."""
        slot = self.recording.lead if slot is None else slot
        total = self.recording.cameras.get(slot, Camera(slot)).frames
        pending: list[np.ndarray] = []  # made, not yet sure to have been shown
        last = sent = 0  # frames of the latest step among `pending`; frames yielded
        for entry in self._entries():
            if entry[0] == "world":
                item = jn.from_json(entry[1])
                mine = self._players(slot)
                out = self._apply(item, frozenset(mine))
                for pid in mine:
                    if pid in out:
                        pending.extend(out[pid])
                        last = len(out[pid])
            elif entry[0] == "drop" and int(entry[1]) == slot:
                n = min(int(entry[2]), len(pending) - last)
                if n > 0:
                    del pending[len(pending) - last - n : len(pending) - last]
            while len(pending) > DROP_WINDOW and sent < total:
                yield pending.pop(0)
                sent += 1
        for frame in pending:
            if sent >= total:
                break
            yield frame
            sent += 1
        self._close()

    def state_at(self, frame: int, slot: int | None = None) -> tuple[bytes, str, dict | None]:
        """The world just after camera ``slot`` (default: the lead's) showed its frame
        ``frame``: -> (world snapshot, that camera's player id in it, the story so far then).
        Nothing is rendered; the step that drew that frame is cut there."""
        slot = self.recording.lead if slot is None else slot
        total = self.recording.cameras.get(slot, Camera(slot)).frames
        if not 0 <= frame < total:
            raise RecordingError(f"frame must be 0..{total - 1}")
        at, shown, story = self._shown_steps(slot), 0, None
        for n, entry in enumerate(self._entries()):
            if entry[0] == "story":
                story = entry[1]
            if entry[0] != "world":
                continue
            item = jn.from_json(entry[1])
            if n in at and shown + at[n] > frame:
                k = frame - shown + 1  # the frames of this step up to that one
                moves = tuple((p, dx, dy, min(c, k)) for p, dx, dy, c in item.moves)
                self._apply(jn.Advance(moves, tuple(h for h in item.held if h[0] < k)))
                break
            self._apply(item)
            shown += at.get(n, 0)
        snapshot = self.engine.snapshot(self._world)
        player = next(iter(self._players(slot)), "")
        self._close()
        return snapshot, player, story

    def _shown_steps(self, slot: int) -> dict[int, int]:
        """Entry number of each step of the camera -> how many of its frames were shown (a
        drop gives up the frames just before the next step's, the tail of earlier steps),
        counted from the journal alone."""
        slots: dict[str, int] = {}
        steps: list[list[int]] = []  # [entry number, frames shown]
        n = -1  # numbered as `_entries` yields them: segments are not
        for entry in self.recording.entries:
            kind = entry[0]
            n += kind != "segment"
            if kind == "segment":
                slots = {str(p): int(s) for p, s in entry[3].items()}
            elif kind == "world":
                item = jn.from_json(entry[1])
                if isinstance(item, jn.Join):
                    slots[item.player_id] = item.slot
                elif isinstance(item, jn.Advance):
                    made = sum(m[3] for m in item.moves if slots.get(m[0]) == slot)
                    if made:
                        steps.append([n, made])
            elif kind == "drop" and int(entry[1]) == slot:
                drop = int(entry[2])
                for step in reversed(steps[:-1]):
                    gone = min(drop, step[1])
                    step[1] -= gone
                    drop -= gone
                    if not drop:
                        break
        return {n: count for n, count in steps}

    def _entries(self) -> Iterator[list]:
        """The recording's entries; segments restart the world (and are not yielded)."""
        for entry in self.recording.entries:
            if entry[0] == "segment":
                self._close()
                frames = {str(p): int(n) for p, n in entry[2].items()}
                self._world = self.engine.start_replay(base64.b64decode(entry[1]), frames)
                self._slots = {str(p): int(s) for p, s in entry[3].items()}
            else:
                yield entry

    def _players(self, slot: int) -> list[str]:
        return [p for p, s in self._slots.items() if s == slot]

    def _apply(self, item: jn.Entry, cameras: frozenset[str] | None = None) -> dict:
        if isinstance(item, jn.Join):
            self._slots[item.player_id] = item.slot
        elif isinstance(item, jn.Leave):
            self._slots.pop(item.player_id, None)
        if isinstance(item, jn.Advance):
            return self.engine.replay_op(self._world, item, cameras)
        self.engine.replay_op(self._world, item)
        return {}

    def _close(self) -> None:
        if self._world:
            self.engine.drop_world(self._world)
        self._world = ""
