"""The batching loop of one worker: plan → step → outputs, returned to its caller.

``EngineCore`` holds the engine and every session attached to the worker. The worker (its
client, as vLLM's EngineCore client drives the core) calls it from two loops and sends what it
returns; nothing here touches a channel layer, placement or the event loop:

- the producer: ``schedule()`` plans one step (``scheduler.plan_step``) and takes the inputs it
  consumes; ``execute(batch)`` runs text events, one batched ``engine.step`` and JPEG encoding
  on the engine thread; ``collect(batch, result, now)`` buffers the frames and returns the
  answers that go out now (frames, event results, sessions that failed);
- the pacer: ``pace(now)`` returns, every tick, each live session's next buffered frame.

The world calls (``create_world``, ``restore_world``, ``snapshot_world``, ``drop_world``,
``apply_and_describe``) run on the engine thread too: the engine is used by one thread only.
"""

import logging
import math
import time
from dataclasses import dataclass, field

import simplejpeg

from inference.serving import snapshot
from inference.serving.frames import FLAG_RESTORED, encode_frame
from inference.serving.messages import Event
from inference.serving.scheduler import ChunkController, StepPlan, plan_step
from inference.serving.session import LiveSession, SessionStatus
from inference.world.engine import PromptError, WorldEngine

log = logging.getLogger(__name__)


@dataclass
class Batch:
    """One planned step and the inputs it takes (events leave their sessions' queues)."""

    plan: StepPlan
    by_player: dict[str, LiveSession]
    events: dict[str, list[tuple[int, str]]]  # session id -> (seq, text) applied before stepping
    answers_to: set[str]  # sessions whose keys changed or that had an event


@dataclass
class StepResult:
    """What the engine thread made: event answers, JPEG frames per player, failed sessions."""

    answers: list[tuple[str, int, str, str | None]]  # (session id, seq, status, reason)
    frames: dict[str, list[bytes]]
    failed: list[str]


@dataclass
class StepOutputs:
    """What the worker sends after a step: frames due now, event answers; sessions to end."""

    frames: list[tuple[str, bytes]] = field(default_factory=list)  # (session id, frame)
    events: list[tuple[str, Event]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


@dataclass
class PaceOutputs:
    frames: list[tuple[str, bytes]]  # (session id, frame) to send this tick
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

    def live(self) -> list[LiveSession]:
        return [s for s in self.sessions.values() if s.status is SessionStatus.LIVE]

    def go_live(self, session: LiveSession, now: float) -> None:
        session.status = SessionStatus.LIVE
        session.stepped_keys = None  # the first step is a cut: fresh frames at once
        session.live_since = session.due = now

    def cover(self) -> int:
        """Frames a session shows while one step runs: the low-water mark of its buffer."""
        return max(1, math.ceil(self._step_s * self.fps))

    # --- the producer: plan -> step -> outputs ---------------------------------------------
    def schedule(self) -> Batch | None:
        """Plan the next step (loop thread) and take the inputs it answers; None: no step."""
        budget = None
        if self.step_budget_s and self._frame_s:
            budget = max(1, int(self.step_budget_s / self._frame_s))
        plan = plan_step(
            self.live(),
            cap=self.controller.cap,
            cover=min(self.cover(), self.engine.max_chunk),
            max_chunk=self.engine.max_chunk,
            max_batch=self.max_batch,
            max_frames=budget,
        )
        if not plan.stepping:
            return None
        by_player, events, answers_to = {}, {}, set()
        for session_id in plan.stepping:
            session = self.sessions[session_id]
            by_player[session.player_id] = session
            if session.events or session.keys != session.stepped_keys:
                session.held_frames = 0
                answers_to.add(session_id)
            session.held_frames += plan.chunk[session.player_id]
            session.stepped_keys = session.keys
            session.state_seq = max(session.state_seq, session.keys_seq)
            if session.events:
                events[session_id] = list(session.events)
                session.events.clear()
        return Batch(plan=plan, by_player=by_player, events=events, answers_to=answers_to)

    def execute(self, batch: Batch) -> StepResult:
        """Engine thread: text events, one batched step, JPEG. A failing session is isolated."""
        plan = batch.plan
        answers = []
        for session_id, items in batch.events.items():
            session = self.sessions.get(session_id)
            world_id = session.world_id if session is not None else ""
            for seq, text in items:
                try:
                    self.engine.apply_event(world_id, text)
                    answers.append((session_id, seq, "applied", None))
                except PromptError as exc:
                    answers.append((session_id, seq, "rejected", str(exc) or "rejected"))
                except Exception:
                    log.exception("event failed in %s", session_id)
                    answers.append((session_id, seq, "rejected", "could not apply"))
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
        frames = {}
        for player_id, video in out.items():
            if player_id not in batch.by_player:
                continue
            frames[player_id] = [
                simplejpeg.encode_jpeg(frame, quality=self.jpeg_quality, colorspace="RGB")
                for frame in video
            ]
        return StepResult(answers=answers, frames=frames, failed=failed)

    def collect(self, batch: Batch, result: StepResult, now: float, took: float) -> StepOutputs:
        """Loop thread: buffer the new frames; -> the answers that go out now."""
        self._busy_s += took
        self._step_s += 0.2 * (took - self._step_s)  # for the low-water mark
        self._frame_s += 0.2 * (took / max(1, batch.plan.frames) - self._frame_s)
        outputs = StepOutputs(failed=[s for s in result.failed if s in self.sessions])
        for session_id, seq, status, _ in result.answers:
            if status == "applied" and session_id in self.sessions:
                session = self.sessions[session_id]
                session.state_seq = max(session.state_seq, seq)
        for player_id, jpegs in result.frames.items():
            session = batch.by_player[player_id]
            if self.sessions.get(session.session_id) is not session:
                continue  # ended or moved while it stepped
            # An answer to new keys goes out now; so does a refill the pacer already missed.
            overdue = not session.buffered and now >= session.due - 0.25 / self.fps
            answer = session.session_id in batch.answers_to or overdue
            if session.session_id in batch.plan.cut:
                # The frames made for the old keys give way: the answer is the next frame.
                session.frames_discarded += len(session.buffered)
                session.buffered.clear()
            # Everything applied to the world so far shows in these frames.
            seq = session.state_seq
            keys = batch.plan.keys[player_id]
            session.buffered.extend((jpeg, seq, keys) for jpeg in jpegs)
            if answer and session.status is SessionStatus.LIVE:
                session.due = now + 1.0 / self.fps
                outputs.frames.append((session.session_id, self.next_frame(session)))
        outputs.events = [
            (session_id, Event(seq=seq, status=status, reason=reason))
            for session_id, seq, status, reason in result.answers
        ]
        return outputs

    def next_frame(self, session: LiveSession) -> bytes:
        """Take the session's next buffered frame and give it its header."""
        jpeg, seq, keys = session.buffered.popleft()
        if keys == session.keys:
            seq = max(seq, session.keys_seq)  # a re-sent key set is what these frames show
        session.applied_seq = max(session.applied_seq, seq)
        flags = FLAG_RESTORED if session.restored else 0
        session.restored = False
        data = encode_frame(session.frame_no, session.applied_seq, jpeg, flags)
        session.frame_no += 1
        self.frames_sent += 1
        self._window_frames[session.session_id] = self._window_frames.get(session.session_id, 0) + 1
        return data

    def snapshots_due(self, every_s: float) -> list[LiveSession]:
        now = time.monotonic()
        due = [s for s in self.live() if now - s.last_snapshot >= every_s]
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
        for session in list(self.sessions.values()):
            if session.status is not SessionStatus.LIVE or now < session.due - period / 4:
                continue
            if not session.buffered:
                starved |= now - session.live_since > 1.0
                continue
            session.due = now + period * 0.75
            frames.append((session.session_id, self.next_frame(session)))
        cover = self.cover()
        refill = any(len(s.buffered) <= cover for s in self.live())
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
        self.session_fps = {
            sid: n / elapsed for sid, n in self._window_frames.items() if sid in self.sessions
        }
        live = self.live()
        self.achieved_fps = (
            sum(self.session_fps.get(s.session_id, 0.0) for s in live) / len(live) if live else 0.0
        )

    # --- world calls (engine thread) -------------------------------------------------------
    def create_world(self, session: LiveSession) -> None:
        session.world_id = self.engine.create_world(prompt=session.prompt, seed=session.seed)
        session.player_id = self.engine.add_player(session.world_id)

    def restore_world(self, session: LiveSession, meta: dict, world: bytes) -> None:
        session.world_id = self.engine.restore(world)
        players = self.engine.players(session.world_id)
        player_id = meta.get("player_id")
        session.player_id = (
            player_id if player_id in players else self.engine.add_player(session.world_id)
        )
        snapshot.apply_meta(session, meta)

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
