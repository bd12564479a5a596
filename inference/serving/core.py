"""The batching loop of one worker: plan → step → outputs, returned to its caller.

``EngineCore`` holds the engine and every session attached to the worker; what it schedules,
steps and paces are cameras (``session.Camera``: one per seated player, so a shared session
of four players is four cameras on one world). The worker (its
client, as vLLM's EngineCore client drives the core) calls it from two loops and sends what it
returns; nothing here touches a channel layer, placement or the event loop:

- the producer: ``schedule()`` plans one step (``scheduler.plan_step``) and takes the inputs it
  consumes; ``execute(batch)`` runs text events, one batched ``engine.step`` and JPEG encoding
  on the engine thread; ``collect(batch, result, now)`` buffers the frames and returns the
  answers that go out now (frames, event results, sessions that failed);
- the pacer: ``pace(now)`` returns, every tick, each live camera's next buffered frame.

A text event from any player changes the one world: it is applied near the sender, answered to
everyone with who sent it, and every other camera of that world is cut so its next frame shows
the change too. The world calls (``create_world``, ``add_camera``, ``restore_world``,
``snapshot_world``, ``drop_world``, ``apply_and_describe``) run on the engine thread too: the
engine is used by one thread only.
"""

import logging
import math
import time
from dataclasses import dataclass, field
from typing import NamedTuple

from inference.serving import snapshot
from inference.serving.frames import FLAG_RESTORED, encode_frame, jpeg
from inference.serving.messages import Error, Event
from inference.serving.scheduler import ChunkController, StepPlan, plan_step
from inference.serving.session import Camera, LiveSession, SessionStatus
from inference.world.engine import PromptError, SnapshotError, UnsupportedEvent, WorldEngine
from inference.world.scenes import DECODE_BATCH

log = logging.getLogger(__name__)


@dataclass
class Batch:
    """One planned step and the inputs it takes (events leave their sessions' queues)."""

    plan: StepPlan
    by_player: dict[str, Camera]
    events: dict[str, list[tuple[int, str]]]  # player id -> (seq, text) applied before stepping
    answers_to: set[str]  # cameras (player ids) whose keys changed or that sent an event


class Answer(NamedTuple):
    """One event text's outcome, made on the engine thread."""

    player_id: str
    seq: int
    status: str  # applied / unsupported / error
    reason: str | None
    text: str
    suggest: tuple[str, ...] = ()  # for unsupported: events the model can do, nearest first


@dataclass
class StepResult:
    """What the engine thread made: event answers, JPEG frames per player, failed sessions."""

    answers: list[Answer]
    frames: dict[str, list[bytes]]
    failed: list[str]  # session ids


@dataclass
class StepOutputs:
    """What the worker sends after a step: frames due now, event answers; sessions to end."""

    frames: list[tuple[Camera, bytes]] = field(default_factory=list)
    # (session id, answer): an Event to everyone, or an Error to the sender alone
    events: list[tuple[str, Event | Error]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # session ids


@dataclass
class PaceOutputs:
    frames: list[tuple[Camera, bytes]]  # (camera, frame) to send this tick
    refill: bool  # a live buffer is low: wake the producer


class EngineCore:
    def __init__(
        self,
        engine: WorldEngine,
        *,
        fps: float,
        sessions: dict[str, LiveSession] | None = None,
        jpeg_quality: int = 80,
        max_batch: int | None = None,
        step_budget_s: float | None = None,
    ) -> None:
        self.engine = engine
        self.fps = fps
        self.jpeg_quality = jpeg_quality
        self.max_batch = max_batch
        # Refill steps of about this long at most (None: one batch for every low buffer).
        # Short steps answer keys sooner but cost more per frame.
        self.step_budget_s = step_budget_s
        self.sessions = sessions if sessions is not None else {}
        self.controller = ChunkController(max_chunk=max(1, engine.max_chunk))
        self.achieved_fps = 0.0
        self.session_fps: dict[str, float] = {}
        self.frames_sent = 0
        self._busy_s = 0.0  # stepping time since the pacer last looked
        self._step_s = 0.0  # smoothed duration of one step
        self._frame_s = 0.0  # smoothed stepping time per frame
        self._window_start: float | None = None
        self._window_frames: dict[str, int] = {}
        self._last_observe: float | None = None

    def live(self) -> list[Camera]:
        """Every live camera of every live session."""
        return [
            camera
            for s in self.sessions.values()
            if s.status is SessionStatus.LIVE
            for camera in s.live_cameras()
        ]

    def cameras(self) -> int:
        """Seated players (cameras) held here: what a worker's capacity counts."""
        return sum(len(s.cameras) for s in self.sessions.values())

    def stats(self) -> dict:
        """The loop's and the engine's counters, for the worker's stats line."""
        engine = self.engine
        return {
            "players": self.cameras(),
            "fps": round(self.achieved_fps, 2),
            "chunk_cap": self.controller.cap,
            "frames_sent": self.frames_sent,
            "frames_discarded": sum(
                c.frames_discarded for s in self.sessions.values() for c in s.cameras.values()
            ),
            "terrain_late_chunks": engine.late_chunks,
            "terrain_ahead_chunks": engine.ahead_chunks,
            "terrain_held_frames": engine.held_frames,
            "terrain_moved_frames": engine.moved_frames,
            "dynamics_ticks": engine.ticks_made,
            "dynamics_ms_per_tick": round(
                1000 * engine.tick_seconds / max(1, engine.ticks_made), 2
            ),
        }

    def go_live(self, session: LiveSession, now: float) -> None:
        session.status = SessionStatus.LIVE
        for camera in session.cameras.values():
            if camera.status is not SessionStatus.PAUSED:
                self.camera_live(camera, now)

    def camera_live(self, camera: Camera, now: float) -> None:
        camera.status = SessionStatus.LIVE
        camera.stepped_keys = None  # the first step is a cut: fresh frames at once
        camera.live_since = camera.due = now

    def chunk_cap(self, cameras: int) -> int:
        """The longest chunk now: the controller's, but no longer than a decoder batch shared
        by the live cameras. A step costs least per frame once it fills a batch (8 cameras'
        single frames cost what 8 frames of one camera do); past that a longer chunk saves
        nothing and only buffers frames the next key change throws away."""
        return min(self.controller.cap, max(1, math.ceil(DECODE_BATCH / max(1, cameras))))

    def cover(self) -> int:
        """Frames a session shows while one step runs: the low-water mark of its buffer."""
        return max(1, math.ceil(self._step_s * self.fps))

    # --- the producer: plan -> step -> outputs ---------------------------------------------
    def schedule(self) -> Batch | None:
        """Plan the next step (loop thread) and take the inputs it answers; None: no step."""
        budget = None
        if self.step_budget_s and self._frame_s:
            budget = max(1, int(self.step_budget_s / self._frame_s))
        live = self.live()
        plan = plan_step(
            live,
            cap=self.chunk_cap(len(live)),
            cover=min(self.cover(), self.engine.max_chunk),
            max_chunk=self.engine.max_chunk,
            max_batch=self.max_batch,
            max_frames=budget,
        )
        if not plan.stepping:
            return None
        cameras = {c.player_id: c for c in live}
        by_player, events, answers_to = {}, {}, set()
        for player_id in plan.stepping:
            camera = cameras[player_id]
            by_player[player_id] = camera
            if camera.events or camera.keys != camera.stepped_keys:
                camera.held_frames = 0
                answers_to.add(player_id)
            camera.held_frames += plan.chunk[player_id]
            camera.stepped_keys = camera.keys
            camera.state_seq = max(camera.state_seq, camera.keys_seq)
            if camera.events:
                events[player_id] = list(camera.events)
                camera.events.clear()
        return Batch(plan=plan, by_player=by_player, events=events, answers_to=answers_to)

    def execute(self, batch: Batch) -> StepResult:
        """Engine thread: text events, one batched step, JPEG. A failing session is isolated."""
        plan = batch.plan
        answers = []
        for player_id, items in batch.events.items():
            camera = batch.by_player[player_id]
            session = self.sessions.get(camera.session_id)
            world_id = session.world_id if session is not None else ""
            for seq, text in items:
                try:
                    self.engine.apply_event(world_id, text, near=player_id)
                    answers.append(Answer(player_id, seq, "applied", None, text))
                except UnsupportedEvent as exc:
                    answers.append(
                        Answer(player_id, seq, "unsupported", str(exc), text, exc.suggest)
                    )
                except PromptError as exc:  # the sender's error: "rejected" is moderation's
                    answers.append(Answer(player_id, seq, "error", str(exc) or "bad text", text))
                except Exception:
                    log.exception("event failed in %s", camera.session_id)
                    answers.append(
                        Answer(player_id, seq, "error", "The world could not apply it.", text)
                    )
        failed = []
        try:
            out = self.engine.step(plan.keys, plan.chunk)
        except Exception:
            # One bad session must not stall the others: step each alone, end whoever fails.
            log.exception("batched step failed; stepping one by one")
            out = {}
            for player_id, keys in plan.keys.items():
                try:
                    out.update(
                        self.engine.step({player_id: keys}, {player_id: plan.chunk[player_id]})
                    )
                except Exception:
                    log.exception("step failed for player %s", player_id)
                    failed.append(batch.by_player[player_id].session_id)
        failed = list(dict.fromkeys(failed))
        frames = {}
        for player_id, video in out.items():
            if player_id not in batch.by_player:
                continue
            frames[player_id] = [jpeg(frame, self.jpeg_quality) for frame in video]
        return StepResult(answers=answers, frames=frames, failed=failed)

    def collect(self, batch: Batch, result: StepResult, now: float, took: float) -> StepOutputs:
        """Loop thread: buffer the new frames; -> the answers that go out now."""
        self._busy_s += took
        self._step_s += 0.2 * (took - self._step_s)  # for the low-water mark
        self._frame_s += 0.2 * (took / max(1, batch.plan.frames) - self._frame_s)
        outputs = StepOutputs(failed=[s for s in result.failed if s in self.sessions])
        for player_id, seq, status, reason, text, suggest in result.answers:
            camera = batch.by_player[player_id]
            session = self.sessions.get(camera.session_id)
            if status == "applied":
                camera.state_seq = max(camera.state_seq, seq)
                for other in session.cameras.values() if session else ():
                    if other is not camera:
                        other.stepped_keys = None  # one world: everyone's next frame shows it
            if status == "error":
                error = Error("event_failed", reason or "", slot=camera.slot, seq=seq)
                outputs.events.append((camera.session_id, error))
                continue
            answer = Event(
                seq, status, reason, by=camera.name, slot=camera.slot, suggest=suggest, text=text
            )
            if session is not None:
                session.recent_events.append(answer)  # replayed to whoever comes (again)
                if status == "applied":
                    self.note(session, "event", camera.name, text)
            outputs.events.append((camera.session_id, answer))
        for player_id, jpegs in result.frames.items():
            camera = batch.by_player[player_id]
            session = self.sessions.get(camera.session_id)
            if session is None or session.cameras.get(camera.slot) is not camera:
                continue  # ended, moved or unseated while it stepped
            # An answer to new keys goes out now; so does a refill the pacer already missed.
            overdue = not camera.buffered and now >= camera.due - 0.25 / self.fps
            answer = player_id in batch.answers_to or overdue
            if player_id in batch.plan.cut:
                # The frames made for the old keys give way: the answer is the next frame.
                camera.frames_discarded += len(camera.buffered)
                if camera.buffered:
                    self.note(session, "drop", camera.slot, len(camera.buffered))
                camera.buffered.clear()
            # Everything applied to the world so far shows in these frames.
            seq = camera.state_seq
            keys = batch.plan.keys[player_id]
            camera.buffered.extend((jpeg, seq, keys) for jpeg in jpegs)
            if answer and camera.status is SessionStatus.LIVE:
                camera.due = now + 1.0 / self.fps
                outputs.frames.append((camera, self.next_frame(camera)))
        return outputs

    def next_frame(self, camera: Camera) -> bytes:
        """Take the camera's next buffered frame and give it its header (seq: this player's)."""
        jpeg, seq, keys = camera.buffered.popleft()
        if keys == camera.keys:
            seq = max(seq, camera.keys_seq)  # a re-sent key set is what these frames show
        camera.applied_seq = max(camera.applied_seq, seq)
        flags = FLAG_RESTORED if camera.restored else 0
        camera.restored = False
        camera.last_jpeg = jpeg
        data = encode_frame(camera.frame_no, camera.applied_seq, jpeg, flags)
        camera.frame_no += 1
        self.frames_sent += 1
        self._window_frames[camera.player_id] = self._window_frames.get(camera.player_id, 0) + 1
        return data

    def snapshots_due(self, every_s: float) -> list[LiveSession]:
        now = time.monotonic()
        due = [
            s
            for s in self.sessions.values()
            if s.status is SessionStatus.LIVE and now - s.last_snapshot >= every_s
        ]
        # Two per round at most: a burst of snapshots would stall one tick for everyone.
        return sorted(due, key=lambda s: s.last_snapshot)[:2]

    # --- the pacer -------------------------------------------------------------------------
    def pace(self, now: float) -> PaceOutputs:
        """One tick: each live session that is due shows its next buffered frame."""
        period = 1.0 / self.fps
        if self._window_start is None:
            self._window_start = self._last_observe = now
        starved = False
        frames = []
        live = self.live()
        for camera in live:
            if now < camera.due - period / 4:
                continue
            if not camera.buffered:
                starved |= now - camera.live_since > 1.0
                continue
            camera.due = now + period * 0.75
            frames.append((camera, self.next_frame(camera)))
        cover = self.cover()
        refill = any(len(c.buffered) <= cover for c in live)
        busy, self._busy_s = self._busy_s, 0.0
        self.controller.observe(
            busy_s=busy, period_s=max(now - self._last_observe, 1e-3), late=starved
        )
        self._last_observe = now
        if now - self._window_start >= 1.0:
            self._measure_fps(now - self._window_start)
            self._window_start, self._window_frames = now, {}
        return PaceOutputs(frames=frames, refill=refill)

    def _measure_fps(self, elapsed: float) -> None:
        """Frames per second of each live camera; a session's is the mean of its players'."""
        live = self.live()
        fps = {c.player_id: self._window_frames.get(c.player_id, 0) / elapsed for c in live}
        by_session: dict[str, list[float]] = {}
        for camera in live:
            by_session.setdefault(camera.session_id, []).append(fps[camera.player_id])
        self.session_fps = {sid: sum(v) / len(v) for sid, v in by_session.items()}
        self.achieved_fps = sum(fps.values()) / len(fps) if fps else 0.0

    # --- the recording -----------------------------------------------------------------------
    # The engine thread (segments, checkpoints) and the loop thread (drops, events, parts) both
    # add entries: each takes the world's journal and adds after it under the recorder's lock,
    # so an entry always follows the world changes made before it.
    def note(self, session: LiveSession, kind: str, *fields) -> None:
        """Add an entry to a session's recording, after what its world did so far."""
        recorder = session.recorder
        if recorder is None or not session.world_id:
            return
        with recorder.lock:
            recorder.world(self.engine.take_journal(session.world_id))
            recorder.note(kind, *fields)

    def record_segment(self, session: LiveSession) -> None:
        """Engine thread: the recording (re)starts from the world as it is now."""
        recorder = session.recorder
        if recorder is None or not session.world_id:
            return
        with recorder.lock:
            entries, world, frames = self.engine.checkpoint(session.world_id)
            recorder.world(entries)
            cameras = {c.player_id: c.slot for c in session.cameras.values() if c.player_id}
            shown = {c.slot: c.frame_no for c in session.cameras.values()}
            recorder.segment(world, frames, cameras, shown)

    def record_checkpoint(self, session: LiveSession, now: float) -> None:
        """Engine thread: a snapshot in the recording (where a fork or a seek can start)."""
        recorder = session.recorder
        if recorder is None or not session.world_id:
            return
        with recorder.lock:
            entries, world, frames = self.engine.checkpoint(session.world_id)
            recorder.world(entries)
            recorder.checkpoint(world, frames, now)

    def recording_part(
        self, session: LiveSession, now: float, *, final: bool = False
    ) -> tuple[str, bytes] | None:
        """The (key, bytes) of the session's next recording part, or None (not recorded)."""
        recorder = session.recorder
        if recorder is None or recorder.ended:
            return None
        with recorder.lock:
            if session.world_id:
                recorder.world(self.engine.take_journal(session.world_id))
            if final:
                recorder.end({c.slot: c.frame_no for c in session.cameras.values()})
            return recorder.take(now, final=final)

    # --- world calls (engine thread) -------------------------------------------------------
    def create_world(self, session: LiveSession, kept: bytes | None = None) -> None:
        """A new world from the session's prompt, or (a Live world) the one kept from its
        last session, without the players who were in it then. A kept world the model cannot
        read (made by an older model version, or damaged) gives way to a fresh one."""
        if kept is not None:
            try:
                session.world_id = self.engine.restore(kept, new_id=True)
            except SnapshotError as exc:
                if session.fork is not None:
                    raise  # a fork of what this model cannot read: never another world
                log.warning("kept world of %s unreadable (%s): a new one", session.session_id, exc)
                kept = None
            else:
                if session.fork is None:  # a Live world lived on while it stood empty
                    self.engine.catch_up_kept(session.world_id, time.time())
                # a fork keeps the avatar of the camera it forked as its first player's
                keep = session.fork[2] if session.fork is not None else None
                lead = session.cameras.get(0)
                for player_id, slot in self.engine.slots(session.world_id).items():
                    if slot == keep and lead is not None and not lead.player_id:
                        self.engine.reseat(player_id, 0)
                        lead.player_id = player_id
                    else:
                        self.engine.remove_player(player_id)
        if kept is None:
            session.world_id = self.engine.create_world(prompt=session.prompt, seed=session.seed)
        for camera in session.cameras.values():
            self.add_camera(session, camera)
        self.record_segment(session)

    def add_camera(self, session: LiveSession, camera: Camera) -> None:
        """Give a seated player their avatar (at their slot's spawn point)."""
        if session.world_id and not camera.player_id:
            camera.player_id = self.engine.add_player(session.world_id, slot=camera.slot)

    def remove_camera(self, session: LiveSession, camera: Camera) -> None:
        if session.world_id and camera.player_id:
            self.engine.remove_player(camera.player_id)
        camera.player_id = ""

    def restore_world(self, session: LiveSession, meta: dict, world: bytes) -> None:
        session.world_id = self.engine.restore(world)
        snapshot.apply_meta(session, meta)
        players = set(self.engine.players(session.world_id))
        for camera in session.cameras.values():
            if camera.player_id not in players:
                camera.player_id = ""
                self.add_camera(session, camera)
        seated = {c.player_id for c in session.cameras.values()}
        for player_id in players - seated:
            self.engine.remove_player(player_id)  # left between the snapshot and the failover
        self.record_segment(session)

    def keep_world(self, session: LiveSession) -> bytes | None:
        """The world as it is now, for the next session of a Live world."""
        if not session.world_id:
            return None
        return self.engine.snapshot(session.world_id, kept_at=time.time())

    def snapshot_world(self, session: LiveSession) -> bytes | None:
        if not session.world_id:
            return None  # dropped while this call waited for the engine
        return snapshot.pack_snapshot(
            snapshot.session_meta(session), self.engine.snapshot(session.world_id)
        )

    def drop_world(self, world_id: str) -> None:
        self.engine.drop_world(world_id)

    def apply_and_describe(self, world_id: str, event_text: str | None) -> dict:
        """Apply an event (if any); the world's description after it."""
        if event_text:
            try:
                self.engine.apply_event(world_id, event_text)
            except PromptError:
                log.warning("narrative event %r not recognised", event_text)
        return self.engine.describe(world_id)
