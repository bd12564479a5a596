"""The inference worker: holds every attached session's world in memory and streams its frames.

One worker = one engine on one device. It listens on its channel-layer inbox
(``worker.<name>``) for attach/input/prompt/choose/say/detach/end messages from the web side.
Two loops serve the sessions: the producer plans (``scheduler.plan_step``) and runs one batched
``engine.step`` after another in the engine's own thread, JPEG-encoding the frames into each
session's buffer; the pacer ticks at the target frame rate and sends every live session its
next buffered frame (``group_send`` to ``session.<id>``). Stepping never holds up the ticks, and
an answer to new keys goes out the moment its step lands.

Story picks and character dialogue (``inference.narrative``) are composed on a narrative thread
and change the world through the engine thread.

Around the loop: a heartbeat to placement every 0.5 s, snapshots of each session every ~2 s,
failover (any live worker reaps dead ones and re-places their sessions, which restore from
their snapshots) and a graceful handover on stop. Django-free: the web side and the
``inference_worker`` command pass in a channel layer and a placement.
"""

import asyncio
import contextlib
import json
import logging
import math
import struct
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import simplejpeg

from inference import narrative
from inference.engine import KEYS, PromptError, SnapshotError, WorldEngine
from inference.placement import HEARTBEAT_S, Placement
from inference.protocol import FLAG_RESTORED, encode_frame, session_group, worker_channel
from inference.scheduler import (
    ChunkController,
    LiveSession,
    SessionStatus,
    StepPlan,
    plan_step,
)

log = logging.getLogger(__name__)

SNAPSHOT_FORMAT = 1
_META_LEN = struct.Struct(">I")
STATUS_EVERY_S = 2.0  # live sessions hear the achieved fps this often
MAX_EVENTS_QUEUED = 8  # text events waiting per session; more are rejected, not queued
MAX_SAYS_QUEUED = 3  # player lines waiting for the character's answer; more get an error


class SnapshotFormatError(ValueError):
    pass


def pack_snapshot(meta: dict, world: bytes) -> bytes:
    """A session snapshot: u32 length + JSON metadata (ids, counters, spec) + the engine's bytes."""
    head = json.dumps({"format": SNAPSHOT_FORMAT, **meta}).encode()
    return _META_LEN.pack(len(head)) + head + world


def unpack_snapshot(data: bytes) -> tuple[dict, bytes]:
    try:
        (size,) = _META_LEN.unpack_from(data)
        meta = json.loads(data[_META_LEN.size : _META_LEN.size + size])
    except (struct.error, ValueError) as exc:
        raise SnapshotFormatError(f"unreadable session snapshot: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != SNAPSHOT_FORMAT:
        raise SnapshotFormatError("unknown session snapshot format")
    return meta, data[_META_LEN.size + size :]


class InferenceWorker:
    def __init__(
        self,
        *,
        name: str,
        channel_layer,
        placement: Placement,
        device: str = "cpu",
        capacity: int = 8,
        fps: float = 24.0,
        engine: WorldEngine | None = None,
        weights: str | None = None,
        snapshot_every_s: float = 2.0,
        jpeg_quality: int = 80,
        max_batch: int | None = None,
        step_budget_s: float | None = None,
    ) -> None:
        if capacity < 1 or fps <= 0:
            raise ValueError("capacity must be >= 1 and fps > 0")
        self.name = name
        self.layer = channel_layer
        self.placement = placement
        self.device = device
        self.capacity = capacity
        self.fps = fps
        self.engine = engine
        self.weights = weights
        self.snapshot_every_s = snapshot_every_s
        self.jpeg_quality = jpeg_quality
        self.max_batch = max_batch
        # Refill steps of about this long at most (None: one batch for every low buffer).
        # Short steps answer keys sooner but cost more per frame.
        self.step_budget_s = step_budget_s
        self.inbox = worker_channel(name)
        self.sessions: dict[str, LiveSession] = {}
        self.controller: ChunkController | None = None
        self.achieved_fps = 0.0
        self.frames_sent = 0
        self.ready = asyncio.Event()
        self._stopping = asyncio.Event()
        self._stopped = asyncio.Event()
        self._engine_thread = ThreadPoolExecutor(1, thread_name_prefix=f"engine-{name}")
        # Story options and replies embed text for a while: off the loop and the engine thread.
        self._narrative_thread = ThreadPoolExecutor(1, thread_name_prefix=f"narrative-{name}")
        self._narrating: dict[str, asyncio.Lock] = {}  # one narrative step at a time per session
        self._says_waiting: dict[str, int] = {}
        self._joined = 0
        self._probe: str | None = None
        self._probe_seen = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._background: set[asyncio.Task] = set()
        self._missing_seen: set[str] = set()
        self._session_fps: dict[str, float] = {}
        self._running = False
        self._stop_requested = False
        self._building = asyncio.Lock()
        self._demand = asyncio.Event()  # wakes the producer: new keys, an event, a low buffer
        self._busy_s = 0.0  # stepping time since the pacer last looked
        self._step_s = 0.0  # smoothed duration of one step
        self._frame_s = 0.0  # smoothed stepping time per frame

    # --- lifecycle -------------------------------------------------------------------------
    async def run(self) -> None:
        """Load the model, listen, register, then tick until ``stop()``."""
        loop = asyncio.get_running_loop()
        self._running = True
        try:
            if self.engine is None:
                self.engine = await loop.run_in_executor(
                    self._engine_thread, lambda: WorldEngine.load(self.device, self.weights)
                )
            self.controller = ChunkController(max_chunk=max(1, self.engine.max_chunk))
            inbox = loop.create_task(self._inbox_loop(), name=f"{self.name}-inbox")
            self._tasks.append(inbox)
            # With the pub/sub layer the inbox subscribes on its first receive; anything sent
            # before that is lost, so placement learns of us only once we hear ourselves.
            await self._wait_listening()
            if self._stopping.is_set():  # stopped while starting up: never register
                return
            await asyncio.to_thread(
                self.placement.register_worker,
                self.name,
                device=self.device,
                capacity=self.capacity,
            )
            self._tasks.append(loop.create_task(self._pace_loop(), name=f"{self.name}-pace"))
            self._tasks.append(loop.create_task(self._produce_loop(), name=f"{self.name}-step"))
            self._tasks.append(loop.create_task(self._monitor_loop(), name=f"{self.name}-mon"))
            self.ready.set()
            log.info("worker %s ready on %s, capacity %d", self.name, self.device, self.capacity)
            await self._stopping.wait()
        finally:
            pending = [*self._tasks, *self._background]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            # Wait for a step in flight: whoever uses the engine next must be alone on it.
            await asyncio.to_thread(self._engine_thread.shutdown, wait=True, cancel_futures=True)
            self._narrative_thread.shutdown(wait=False, cancel_futures=True)
            self._running = False
            self._stopped.set()

    async def wait_ready(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self.ready.wait(), timeout)

    async def stop(self, *, handover: bool = True) -> None:
        """Graceful stop: snapshot every session, hand each to another worker, deregister."""
        if self._stop_requested or not self._running:
            if self._running:
                await self._stopped.wait()
            return
        self._stop_requested = True
        for task in self._tasks[1:]:  # tick and heartbeat stop; the inbox keeps draining
            task.cancel()
        await asyncio.gather(*self._tasks[1:], return_exceptions=True)
        try:
            if handover and self.ready.is_set():
                await self._hand_over()
            await asyncio.to_thread(self.placement.deregister, self.name)
        except Exception:
            log.exception("worker %s: handover failed", self.name)
        for session in list(self.sessions.values()):
            await self._drop_local(session)
        self._stopping.set()
        await self._stopped.wait()

    async def abandon(self) -> None:
        """Stop without a word to placement, as a crashed process would (failover tests)."""
        self._stop_requested = True
        self._stopping.set()
        await self._stopped.wait()

    async def _hand_over(self) -> None:
        for session in list(self.sessions.values()):
            with contextlib.suppress(Exception):
                await self._save_snapshot(session)
        placed = await asyncio.to_thread(self.placement.handover, self.name)
        for session_id, target in placed:
            await self._status(session_id, "resuming", worker=target)
            await self.layer.send(
                worker_channel(target),
                {"type": "session.attach", "session_id": session_id, "restore": True},
            )
        for session in list(self.sessions.values()):
            await self._drop_local(session)
        log.info("worker %s handed over %d sessions", self.name, len(placed))

    async def _wait_listening(self) -> None:
        self._probe = uuid.uuid4().hex
        while not self._probe_seen.is_set() and not self._stopping.is_set():
            await self.layer.send(self.inbox, {"type": "worker.probe", "nonce": self._probe})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._probe_seen.wait(), 0.2)

    # --- inbox -----------------------------------------------------------------------------
    async def _inbox_loop(self) -> None:
        # Never cancel receive() between messages: with the pub/sub layer that unsubscribes.
        while True:
            message = await self.layer.receive(self.inbox)
            try:
                self._dispatch(message)
            except Exception:
                log.exception("worker %s: bad message %r", self.name, message.get("type"))

    def _dispatch(self, message: dict) -> None:
        kind = message.get("type")
        if kind == "worker.probe":
            if message.get("nonce") == self._probe:
                self._probe_seen.set()
            return
        session_id = str(message.get("session_id", ""))
        if kind == "session.attach":
            self._on_attach(session_id, message)
            return
        session = self.sessions.get(session_id)
        if session is None:
            log.debug("worker %s: %s for unknown session %s", self.name, kind, session_id)
            return
        if kind == "session.input":
            self._on_input(session, message)
        elif kind == "session.prompt":
            self._on_prompt(session, message)
        elif kind == "session.choose":
            self._on_choose(session, message)
        elif kind == "session.say":
            self._on_say(session, message)
        elif kind == "session.detach":
            self._on_detach(session)
        elif kind == "session.end":
            self._spawn(self._end(session, reason=str(message.get("reason") or "ended")))
        else:
            log.warning("worker %s: unknown message type %r", self.name, kind)

    def _on_attach(self, session_id: str, message: dict) -> None:
        held = self.sessions.get(session_id)
        if held is not None:
            # A reconnect (or a second attach): the same world goes on where it was.
            if held.status is SessionStatus.PAUSED:
                self._go_live(held)
            if held.status is SessionStatus.LIVE:
                self._spawn(self._status(session_id, "live"))
                self._spawn(self._narrative_live(held))  # the reconnected client needs the choices
            return
        if self._stop_requested:
            return  # shutting down: placement already sends this session elsewhere
        if not session_id or len(self.sessions) >= self.capacity:
            self._spawn(self._status(session_id, "ended", reason="worker_full"))
            return
        self._joined += 1
        session = LiveSession(
            session_id=session_id,
            prompt=str(message.get("prompt") or ""),
            seed=_int(message.get("seed")),
            world_title=str(message.get("world_title") or ""),
            joined=self._joined,
        )
        self.sessions[session_id] = session
        spec = {
            "category": str(message.get("category") or ""),
            "opening": str(message.get("story_opening") or ""),
            "character": message.get("character"),
        }
        self._spawn(self._start(session, restore=bool(message.get("restore")), spec=spec))

    def _on_input(self, session: LiveSession, message: dict) -> None:
        seq = _int(message.get("seq"))
        if seq < session.keys_seq:
            return  # out of order: a newer input already arrived
        raw = message.get("keys")
        keys = frozenset(k for k in raw if k in KEYS) if isinstance(raw, list) else frozenset()
        if keys != session.keys:
            self._demand.set()  # answer new keys with the next step, not the next low buffer
        session.keys = keys
        session.keys_seq = seq

    def _on_prompt(self, session: LiveSession, message: dict) -> None:
        seq, text = _int(message.get("seq")), message.get("text")
        if not isinstance(text, str) or len(session.events) >= MAX_EVENTS_QUEUED:
            reason = "bad_text" if not isinstance(text, str) else "too_many_events"
            self._spawn(self._event(session.session_id, seq, "rejected", reason))
            return
        session.events.append((seq, text))
        self._demand.set()

    def _on_choose(self, session: LiveSession, message: dict) -> None:
        if not isinstance(session.narrative, narrative.Story):
            self._spawn(self._error(session.session_id, "unsupported", "No story in this world."))
            return
        try:
            # Taken off the offer at once: a double click or a stale tab gets an error.
            story, picked = narrative.story_pick(
                session.narrative, str(message.get("choice_id")), message.get("option")
            )
        except narrative.ChoiceError as exc:
            self._spawn(self._error(session.session_id, "stale_choice", str(exc)))
            return
        session.narrative = story
        self._spawn(self._story_step(session, picked))

    def _on_say(self, session: LiveSession, message: dict) -> None:
        text, sid = message.get("text"), session.session_id
        if not isinstance(session.narrative, narrative.Character):
            self._spawn(self._error(sid, "unsupported", "No one here to talk to."))
        elif not isinstance(text, str) or not text.strip() or len(text) > 500:
            self._spawn(self._error(sid, "bad_text", "Say something (500 characters at most)."))
        elif self._says_waiting.get(sid, 0) >= MAX_SAYS_QUEUED:
            self._spawn(self._error(sid, "too_many_messages", "Wait for an answer first."))
        else:
            self._says_waiting[sid] = self._says_waiting.get(sid, 0) + 1
            self._spawn(self._character_turn(session, text.strip()))

    def _on_detach(self, session: LiveSession) -> None:
        # Nobody steers a detached session: it waits (paused) for the player's reconnect.
        session.keys = frozenset()
        if session.status is SessionStatus.LIVE:
            session.status = SessionStatus.PAUSED
            session.buffered.clear()
            self._spawn(self._save_snapshot(session))

    # --- sessions --------------------------------------------------------------------------
    async def _start(
        self, session: LiveSession, *, restore: bool, spec: dict | None = None
    ) -> None:
        loop = asyncio.get_running_loop()
        try:
            if restore:
                await self._status(session.session_id, "resuming")
                data = await asyncio.to_thread(self.placement.load_snapshot, session.session_id)
                if data is not None:
                    meta, world = unpack_snapshot(data)
                    async with self._building:
                        await loop.run_in_executor(
                            self._engine_thread, self._restore, session, meta, world
                        )
                elif session.prompt:
                    restore = False  # died before its first snapshot: start the world again
                else:
                    await self._end(session, reason="snapshot_lost")
                    return
            if not restore:
                await self._status(session.session_id, "starting")
                # One world build queued at a time: builds take seconds on a CPU, and steps
                # for the live sessions get the engine between two of them.
                async with self._building:
                    await loop.run_in_executor(self._engine_thread, self._create, session)
                await self._begin_narrative(session, spec or {})
                await self._save_snapshot(session)  # from now on it survives a crash
        except (PromptError, SnapshotError, SnapshotFormatError, ValueError) as exc:
            log.warning("worker %s: cannot start %s: %s", self.name, session.session_id, exc)
            await self._end(session, reason="bad_world")
            return
        except Exception:
            log.exception("worker %s: starting %s failed", self.name, session.session_id)
            await self._end(session, reason="worker_error")
            return
        if self.sessions.get(session.session_id) is not session:
            await self._drop_local(session)  # ended while its world was being built
            return
        if session.status is SessionStatus.STARTING:
            self._go_live(session)
        await self._status(session.session_id, "live")
        self._spawn(self._narrative_live(session))

    def _go_live(self, session: LiveSession) -> None:
        session.status = SessionStatus.LIVE
        session.stepped_keys = None  # the first step is a cut: fresh frames at once
        session.live_since = session.due = asyncio.get_running_loop().time()
        self._demand.set()

    def _create(self, session: LiveSession) -> None:  # engine thread
        session.world_id = self.engine.create_world(prompt=session.prompt, seed=session.seed)
        session.player_id = self.engine.add_player(session.world_id)

    def _restore(self, session: LiveSession, meta: dict, world: bytes) -> None:  # engine thread
        session.world_id = self.engine.restore(world)
        players = self.engine.players(session.world_id)
        player_id = meta.get("player_id")
        session.player_id = (
            player_id if player_id in players else self.engine.add_player(session.world_id)
        )
        session.prompt = meta.get("prompt", session.prompt)
        session.seed = _int(meta.get("seed"))
        session.world_title = meta.get("world_title", session.world_title)
        session.frame_no = _int(meta.get("frame_no"))
        session.applied_seq = _int(meta.get("applied_seq"))
        # Keys that arrived while the world was restoring are newer than the snapshot: keep them.
        session.keys_seq = max(session.keys_seq, session.applied_seq)
        session.state_seq = max(session.applied_seq, _int(meta.get("state_seq")))
        session.restored = True
        session.stepped_keys = None
        session.narrative = narrative.from_meta(meta.get("narrative"))

    def _snapshot(self, session: LiveSession) -> bytes | None:  # engine thread
        if not session.world_id:
            return None  # dropped while this call waited for the engine
        meta = {
            "session_id": session.session_id,
            "player_id": session.player_id,
            "prompt": session.prompt,
            "seed": session.seed,
            "world_title": session.world_title,
            "frame_no": session.frame_no,
            "applied_seq": session.applied_seq,
            "state_seq": session.state_seq,
            # Story so far, the pair on offer, dialogue turn: failover and handover keep them.
            "narrative": session.narrative.to_meta() if session.narrative else None,
        }
        return pack_snapshot(meta, self.engine.snapshot(session.world_id))

    async def _save_snapshot(self, session: LiveSession) -> None:
        if not session.world_id:
            return
        session.last_snapshot = time.monotonic()
        data = await asyncio.get_running_loop().run_in_executor(
            self._engine_thread, self._snapshot, session
        )
        if data is None:
            return
        await asyncio.to_thread(self.placement.save_snapshot, session.session_id, data)
        await asyncio.to_thread(self.placement.record_frames, session.session_id, session.frame_no)

    async def _end(self, session: LiveSession, *, reason: str) -> None:
        """End one session here: free its slot, forget its snapshot, tell its clients."""
        if self.sessions.get(session.session_id) is not session:
            return
        session.status = SessionStatus.ENDED
        await self._drop_local(session)
        await asyncio.to_thread(self.placement.record_frames, session.session_id, session.frame_no)
        await asyncio.to_thread(self.placement.release_slot, session.session_id)
        await asyncio.to_thread(self.placement.delete_snapshot, session.session_id)
        await self._status(session.session_id, "ended", reason=reason)
        log.info("worker %s: session %s ended (%s)", self.name, session.session_id, reason)

    async def _drop_local(self, session: LiveSession) -> None:
        """Forget a session on this worker only (placement untouched)."""
        if self.sessions.get(session.session_id) is session:
            del self.sessions[session.session_id]
            self._session_fps.pop(session.session_id, None)
            self._narrating.pop(session.session_id, None)
            self._says_waiting.pop(session.session_id, None)
        session.status = SessionStatus.ENDED
        if session.world_id:
            world_id, session.world_id = session.world_id, ""
            with contextlib.suppress(Exception):
                await asyncio.get_running_loop().run_in_executor(
                    self._engine_thread, self.engine.drop_world, world_id
                )

    # --- story and dialogue (inference.narrative) -------------------------------------------
    async def _begin_narrative(self, session: LiveSession, spec: dict) -> None:
        if spec.get("category") not in ("stories", "characters"):
            return
        try:
            world = await self._world_change(session, None)
            session.narrative = narrative.begin(
                spec["category"], world, opening=spec["opening"], character=spec["character"]
            )
        except Exception:  # the world still plays without its story
            log.exception("worker %s: no narrative for %s", self.name, session.session_id)

    async def _narrative_live(self, session: LiveSession) -> None:
        """On going live (fresh, restored or reconnected): the pair on offer, or a new one; the
        character's greeting once."""
        if session.narrative is None:
            return
        async with self._narrating.setdefault(session.session_id, asyncio.Lock()):
            try:
                state = session.narrative
                if isinstance(state, narrative.Story):
                    if not state.options:
                        await self._offer(session)
                    elif self.sessions.get(session.session_id) is session:
                        await self._choices(session.session_id, state)
                elif isinstance(state, narrative.Character) and not state.greeted:
                    session.narrative, greeting = narrative.character_greet(state)
                    await self._say(session.session_id, state.name, greeting)
            except Exception:
                log.exception("worker %s: narrative of %s failed", self.name, session.session_id)

    async def _story_step(self, session: LiveSession, picked: narrative.Option) -> None:
        """A pick: its event changes the world, then the next pair is composed and offered."""
        async with self._narrating.setdefault(session.session_id, asyncio.Lock()):
            try:
                await self._world_change(session, picked.event_text)
                await self._offer(session)
            except Exception:
                log.exception("worker %s: story step of %s failed", self.name, session.session_id)

    async def _offer(self, session: LiveSession) -> None:
        world = await self._world_change(session, None)
        story = await asyncio.get_running_loop().run_in_executor(
            self._narrative_thread, narrative.story_offer, session.narrative, world, session.seed
        )
        if self.sessions.get(session.session_id) is not session:
            return  # ended or moved while the options were composed
        session.narrative = story
        await self._save_snapshot(session)  # a pick after a failover finds this pair on offer
        await self._choices(session.session_id, story)

    async def _character_turn(self, session: LiveSession, line: str) -> None:
        sid = session.session_id
        try:
            async with self._narrating.setdefault(sid, asyncio.Lock()):
                await self._say(sid, "you", line)
                world = await self._world_change(session, None)
                character, reply = await asyncio.get_running_loop().run_in_executor(
                    self._narrative_thread,
                    narrative.character_reply,
                    session.narrative,
                    world,
                    line,
                    session.seed,
                )
                if self.sessions.get(sid) is not session:
                    return
                session.narrative = character
                if reply.event_text:
                    await self._world_change(session, reply.event_text)
                await self._say(sid, character.name, reply.text)
        except Exception:
            log.exception("worker %s: dialogue of %s failed", self.name, sid)
        finally:
            if sid in self._says_waiting:
                self._says_waiting[sid] = max(0, self._says_waiting[sid] - 1)

    async def _world_change(self, session: LiveSession, event_text: str | None) -> dict:
        """Apply an event (if any) on the engine thread; the world's description after it."""
        world = await asyncio.get_running_loop().run_in_executor(
            self._engine_thread, self._apply_and_describe, session.world_id, event_text
        )
        if event_text:
            session.stepped_keys = None  # a cut: the next frame already shows the change
            self._demand.set()
        return world

    def _apply_and_describe(self, world_id: str, event_text: str | None) -> dict:  # engine thread
        if event_text:
            try:
                self.engine.apply_event(world_id, event_text)
            except PromptError:
                log.warning("worker %s: narrative event %r not recognised", self.name, event_text)
        return self.engine.describe(world_id)

    # --- the pacer and the producer --------------------------------------------------------
    async def _pace_loop(self) -> None:
        """Every tick, each live session shows its next buffered frame."""
        loop = asyncio.get_running_loop()
        period = 1.0 / self.fps
        next_tick = loop.time()
        window_start, window_frames = loop.time(), {}
        last_status = last_observe = loop.time()
        while True:
            now = loop.time()
            starved = False
            sends = []
            for session in list(self.sessions.values()):
                if session.status is not SessionStatus.LIVE or now < session.due - period / 4:
                    continue
                if not session.buffered:
                    starved |= now - session.live_since > 1.0
                    continue
                session.due = now + period * 0.75
                sends.append(self._send_frame(session))
                window_frames[session.session_id] = window_frames.get(session.session_id, 0) + 1
            await self._gather_sends(sends)
            if any(
                s.status is SessionStatus.LIVE and len(s.buffered) <= self._cover()
                for s in self.sessions.values()
            ):
                self._demand.set()
            busy, self._busy_s = self._busy_s, 0.0
            self.controller.observe(
                busy_s=busy, period_s=max(now - last_observe, 1e-3), late=starved
            )
            last_observe = now
            if now - window_start >= 1.0:
                self._measure_fps(window_frames, now - window_start)
                window_start, window_frames = now, {}
            if now - last_status >= STATUS_EVERY_S:
                last_status = now
                self._spawn(self._broadcast_fps())
            next_tick += period
            if loop.time() - next_tick > 2 * period:
                next_tick = loop.time()  # fell behind: skip ticks rather than burst to catch up
            await asyncio.sleep(max(0.0, next_tick - loop.time()))

    def _measure_fps(self, window_frames: dict, elapsed: float) -> None:
        self._session_fps = {
            sid: n / elapsed for sid, n in window_frames.items() if sid in self.sessions
        }
        live = [s for s in self.sessions.values() if s.status is SessionStatus.LIVE]
        self.achieved_fps = (
            sum(self._session_fps.get(s.session_id, 0.0) for s in live) / len(live) if live else 0.0
        )

    def _cover(self) -> int:
        """Frames a session shows while one step runs: the low-water mark of its buffer."""
        return max(1, math.ceil(self._step_s * self.fps))

    async def _produce_loop(self) -> None:
        """Step after step, for whoever needs frames; woken early by inputs and low buffers."""
        loop = asyncio.get_running_loop()
        period = 1.0 / self.fps
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._demand.wait(), period)
            self._demand.clear()
            live = [s for s in self.sessions.values() if s.status is SessionStatus.LIVE]
            budget = None
            if self.step_budget_s and self._frame_s:
                budget = max(1, int(self.step_budget_s / self._frame_s))
            plan = plan_step(
                live,
                cap=self.controller.cap,
                cover=min(self._cover(), self.engine.max_chunk),
                max_chunk=self.engine.max_chunk,
                max_batch=self.max_batch,
                max_frames=budget,
            )
            if plan.stepping:
                started = loop.time()
                try:
                    await self._run_step(plan)
                except Exception:
                    log.exception("worker %s: step failed", self.name)
                took = loop.time() - started
                self._busy_s += took
                self._step_s += 0.2 * (took - self._step_s)  # for the low-water mark
                self._frame_s += 0.2 * (took / max(1, plan.frames) - self._frame_s)
            await self._snapshot_due()

    async def _run_step(self, plan: StepPlan) -> None:
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
        loop = asyncio.get_running_loop()
        answers, frames, failed = await loop.run_in_executor(
            self._engine_thread, self._step_and_encode, plan, by_player, events
        )
        for session_id, seq, status, _ in answers:
            if status == "applied" and session_id in self.sessions:
                session = self.sessions[session_id]
                session.state_seq = max(session.state_seq, seq)
        sends = []
        now = loop.time()
        for player_id, jpegs in frames.items():
            session = by_player[player_id]
            if self.sessions.get(session.session_id) is not session:
                continue  # ended or moved while it stepped
            # An answer to new keys goes out now; so does a refill the pacer already missed.
            overdue = not session.buffered and now >= session.due - 0.25 / self.fps
            answer = session.session_id in answers_to or overdue
            if session.session_id in plan.cut:
                # The frames made for the old keys give way: the answer is the next frame.
                session.frames_discarded += len(session.buffered)
                session.buffered.clear()
            # Everything applied to the world so far shows in these frames.
            seq = session.state_seq
            keys = plan.keys[player_id]
            session.buffered.extend((jpeg, seq, keys) for jpeg in jpegs)
            if answer and session.status is SessionStatus.LIVE:
                session.due = now + 1.0 / self.fps
                sends.append(self._send_frame(session))
        # Buffers first, then the awaits: the pacer never shows a frame from before an answer
        # after the answer's event message.
        for session_id, seq, status, reason in answers:
            await self._event(session_id, seq, status, reason)
        await self._gather_sends(sends)
        for session_id in failed:
            if session_id in self.sessions:
                await self._end(self.sessions[session_id], reason="worker_error")

    def _step_and_encode(self, plan: StepPlan, by_player: dict, events: dict):
        """Engine thread: text events, one batched step, JPEG. A failing session is isolated."""
        answers = []
        for session_id, items in events.items():
            world_id = self.sessions[session_id].world_id if session_id in self.sessions else ""
            for seq, text in items:
                try:
                    self.engine.apply_event(world_id, text)
                    answers.append((session_id, seq, "applied", None))
                except PromptError as exc:
                    answers.append((session_id, seq, "rejected", str(exc) or "rejected"))
                except Exception:
                    log.exception("worker %s: event failed in %s", self.name, session_id)
                    answers.append((session_id, seq, "rejected", "could not apply"))
        failed = []
        try:
            out = self.engine.step(plan.keys, plan.chunk)
        except Exception:
            # One bad session must not stall the others: step each alone, end whoever fails.
            log.exception("worker %s: batched step failed; stepping one by one", self.name)
            out = {}
            for player_id, keys in plan.keys.items():
                try:
                    out.update(
                        self.engine.step({player_id: keys}, {player_id: plan.chunk[player_id]})
                    )
                except Exception:
                    log.exception("worker %s: step failed for player %s", self.name, player_id)
                    failed.append(by_player[player_id].session_id)
        frames = {}
        for player_id, video in out.items():
            if player_id not in by_player:
                continue
            frames[player_id] = [
                simplejpeg.encode_jpeg(frame, quality=self.jpeg_quality, colorspace="RGB")
                for frame in video
            ]
        return answers, frames, failed

    async def _send_frame(self, session: LiveSession) -> None:
        jpeg, seq, keys = session.buffered.popleft()
        if keys == session.keys:
            seq = max(seq, session.keys_seq)  # a re-sent key set is what these frames show
        session.applied_seq = max(session.applied_seq, seq)
        flags = FLAG_RESTORED if session.restored else 0
        session.restored = False
        data = encode_frame(session.frame_no, session.applied_seq, jpeg, flags)
        session.frame_no += 1
        self.frames_sent += 1
        await self.layer.group_send(
            session_group(session.session_id), {"type": "session.frame", "data": data}
        )

    async def _gather_sends(self, sends: list) -> None:
        for result in await asyncio.gather(*sends, return_exceptions=True):
            if isinstance(result, Exception):
                log.warning("worker %s: frame send failed: %s", self.name, result)

    async def _snapshot_due(self) -> None:
        now = time.monotonic()
        due = [
            s
            for s in self.sessions.values()
            if s.status is SessionStatus.LIVE and now - s.last_snapshot >= self.snapshot_every_s
        ]
        # Two per tick at most: a burst of snapshots would stall one tick for everyone.
        for session in sorted(due, key=lambda s: s.last_snapshot)[:2]:
            try:
                await self._save_snapshot(session)
            except Exception:
                log.exception("worker %s: snapshot of %s failed", self.name, session.session_id)

    # --- registry, failover ----------------------------------------------------------------
    async def _monitor_loop(self) -> None:
        while True:
            try:
                await self._monitor_once()
            except Exception:
                log.exception("worker %s: heartbeat/failover round failed", self.name)
            await asyncio.sleep(HEARTBEAT_S)

    async def _monitor_once(self) -> None:
        alive = await asyncio.to_thread(
            self.placement.heartbeat, self.name, load=len(self.sessions), fps=self.achieved_fps
        )
        if not alive:
            # We were reaped (stalled past the deadline): our sessions belong to others now.
            log.warning("worker %s was reaped; dropping its sessions and re-registering", self.name)
            for session in list(self.sessions.values()):
                await self._drop_local(session)
            await asyncio.to_thread(
                self.placement.register_worker,
                self.name,
                device=self.device,
                capacity=self.capacity,
            )
        dead, placed = await asyncio.to_thread(self.placement.reap)
        if dead:
            log.warning(
                "worker %s: workers %s are dead; re-placing %d sessions",
                self.name,
                dead,
                len(placed),
            )
        for session_id, target in placed:
            await self._status(session_id, "resuming", worker=target)
            message = {"type": "session.attach", "session_id": session_id, "restore": True}
            if target == self.name:
                self._dispatch(message)
            else:
                await self.layer.send(worker_channel(target), message)
        await self._adopt_missing()

    async def _adopt_missing(self) -> None:
        """Restore sessions placement gives us but we do not hold (a lost attach message).

        Only those with a snapshot (fresh reservations wait for the player's attach) and only
        when seen missing twice in a row, so an attach already on its way wins.
        """
        assigned = await asyncio.to_thread(self.placement.sessions_of, self.name)
        missing = {sid for sid in assigned if sid not in self.sessions}
        for session_id in missing & self._missing_seen:
            snapshot = await asyncio.to_thread(self.placement.load_snapshot, session_id)
            if snapshot is not None and session_id not in self.sessions:
                log.warning("worker %s: adopting %s from its snapshot", self.name, session_id)
                self._dispatch(
                    {"type": "session.attach", "session_id": session_id, "restore": True}
                )
        self._missing_seen = missing

    # --- messages to clients ---------------------------------------------------------------
    async def _status(
        self, session_id: str, state: str, *, reason: str | None = None, worker: str | None = None
    ) -> None:
        message = {
            "type": "session.status",
            "state": state,
            "fps": round(self._session_fps.get(session_id, 0.0), 1),
            "reason": reason,
            "worker": worker or self.name,
        }
        await self._group(session_id, message)

    async def _event(self, session_id: str, seq: int, status: str, reason: str | None) -> None:
        message = {"type": "session.event", "seq": seq, "status": status, "reason": reason}
        await self._group(session_id, message)

    async def _choices(self, session_id: str, story: narrative.Story) -> None:
        message = {"type": "session.choices", **narrative.choices_message(story)}
        await self._group(session_id, message)

    async def _say(self, session_id: str, speaker: str, text: str) -> None:
        await self._group(session_id, {"type": "session.say", "speaker": speaker, "text": text})

    async def _error(self, session_id: str, code: str, message: str) -> None:
        await self._group(session_id, {"type": "session.error", "code": code, "message": message})

    async def _group(self, session_id: str, message: dict) -> None:
        """Send to a session's group; a failed send is logged, never raised into the loop."""
        try:
            await self.layer.group_send(session_group(session_id), message)
        except Exception:
            log.exception("worker %s: %s to %s failed", self.name, message["type"], session_id)

    async def _broadcast_fps(self) -> None:
        for session in list(self.sessions.values()):
            if session.status is SessionStatus.LIVE:
                await self._status(session.session_id, "live")

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def stats(self) -> dict:
        return {
            "name": self.name,
            "sessions": len(self.sessions),
            "fps": round(self.achieved_fps, 2),
            "chunk_cap": self.controller.cap if self.controller else 1,
            "frames_sent": self.frames_sent,
            "frames_discarded": sum(s.frames_discarded for s in self.sessions.values()),
        }


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
