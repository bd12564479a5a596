"""The inference worker process: the channel-layer glue around the batching loop.

One worker = one engine on one device. It listens on its inbox (``worker_channel(name)``) for
the typed messages of ``inference.serving.messages``, keeps every attached session in an
``EngineCore`` (``core.py``) and sends what the core returns through its ``Outbox``
(``outbox.py``). Two loops drive the core: the producer (``schedule`` → ``execute`` on the
engine thread → ``collect``) keeps the frame buffers filled, the pacer (``pace``) shows each
live session its next frame at the target frame rate. Stepping never holds up the ticks, and an
answer to new keys goes out the moment its step lands.

Around the loops: starting, restoring and ending sessions; story votes (``votes.py``), story
steps and dialogue (``narration.py``); snapshots, kept worlds and recordings
(``storage.py``); failover and a graceful handover on stop (``failover.py``). Django-free: the
web side and the ``inference_worker`` command pass in a channel layer and a placement.
"""

import asyncio
import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch

from inference.narrative.narrator import Narrator
from inference.serving import messages as m
from inference.serving.config import WorkerConfig
from inference.serving.core import EngineCore, StepOutputs
from inference.serving.failover import HEARTBEAT_S, Failover
from inference.serving.narration import Narration
from inference.serving.outbox import Outbox
from inference.serving.placement import Placement
from inference.serving.recording import Recorder
from inference.serving.session import Camera, LiveSession, SessionStatus
from inference.serving.snapshot import SnapshotFormatError, unpack_snapshot
from inference.serving.storage import SessionStorage, WorldStore
from inference.serving.votes import StoryVotes
from inference.world.engine import PromptError, SnapshotError, WorldEngine, check_text
from inference.world.spec import KEYS

log = logging.getLogger(__name__)

STATS_EVERY_S = 5.0  # how often a serving worker logs its stats() (one JSON line)
STATUS_EVERY_S = 2.0  # live sessions hear the achieved fps this often
MAX_EVENTS_QUEUED = 8  # text events waiting per session; more get an error, not queued


class InferenceWorker:
    def __init__(
        self,
        config: WorkerConfig,
        *,
        channel_layer,
        placement: Placement,
        engine: WorldEngine | None = None,
        narrator: Narrator | None = None,
        screen: Callable[[str], bool] | None = None,
        world_store: WorldStore | None = None,
    ) -> None:
        """``narrator``: who writes stories and replies (default: ``Narrator.from_env``, which
        reads ``NARRATIVE_LM`` and friends). ``screen(text) -> bool``: may a generated line be
        shown; the web side passes moderation's play screening (this package is Django-free).
        ``world_store``: where Live worlds are kept between sessions and recordings written
        (None: neither)."""
        self.config = config
        name = self.name = config.name
        self.layer = channel_layer
        self.placement = placement
        self.failover = Failover(
            placement, name=name, device=config.device, capacity=config.capacity
        )
        self.engine = engine
        self.record = config.record and world_store is not None
        self.inbox = m.worker_channel(name)
        self.sessions: dict[str, LiveSession] = {}  # shared with the core
        self.core: EngineCore | None = None
        self.ready = asyncio.Event()
        self._stopping = asyncio.Event()
        self._stopped = asyncio.Event()
        self._engine_thread = ThreadPoolExecutor(1, thread_name_prefix=f"engine-{name}")
        self.outbox = Outbox(
            channel_layer, name=name, sessions=self.sessions, placement=placement,
            fps_of=lambda sid: self.core.session_fps.get(sid, 0.0) if self.core else 0.0,
        )  # fmt: skip
        self.storage = SessionStorage(
            name=name, placement=placement, world_store=world_store,
            engine_thread=self._engine_thread,
        )  # fmt: skip
        # Story options and replies take a while to generate: off the loop and the engine thread.
        self.narration = Narration(
            self,
            narrator if narrator is not None else Narrator.from_env(),
            name=name,
            capacity=config.capacity,
            screen=screen,
        )
        self.votes = StoryVotes(
            window_s=config.vote_window_s,
            spawn=self._spawn,
            send_choices=self.outbox.choices,
            on_pick=self.narration.story_step,
            holds=lambda session: self.sessions.get(session.session_id) is session,
        )
        # Sessions between leaving here and leaving placement: not to be adopted back meanwhile.
        self._ending: set[str] = set()
        self._joined = 0
        self._probe: str | None = None
        self._probe_seen = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._background: set[asyncio.Task] = set()
        self._running = False
        self._stop_requested = False
        self._building = asyncio.Lock()
        self._demand = asyncio.Event()  # wakes the producer: new keys, an event, a low buffer

    # --- lifecycle -------------------------------------------------------------------------
    async def run(self) -> None:
        """Load the model, listen, register, then tick until ``stop()``."""
        loop = asyncio.get_running_loop()
        self._running = True
        # The language models load (and re-encode, the first time on a machine) beside the world
        # model, so the first player's story options or reply never wait for them.
        threading.Thread(
            target=self.narration.narrator.warm_up, name=f"{self.name}-lm-load", daemon=True
        ).start()
        try:
            # process-wide; set on the engine thread too, which keeps it for its own ops
            torch.set_num_threads(self.config.threads)
            await self._on_engine(torch.set_num_threads, self.config.threads)
            if self.engine is None:
                config = self.config
                self.engine = await self._on_engine(WorldEngine.load, config.device, config.weights)
            self.core = EngineCore(
                self.engine,
                fps=self.config.fps,
                sessions=self.sessions,
                jpeg_quality=self.config.jpeg_quality,
                max_batch=self.config.max_batch,
                step_budget_s=self.config.step_budget_s,
            )
            # Terrain ahead of the players grows on its own thread, and the world's ticks are
            # made on another: a step only cuts a tick and applies the last.
            self.engine.start_terrain()
            self.engine.start_evolution()
            inbox = loop.create_task(self._inbox_loop(), name=f"{self.name}-inbox")
            self._tasks.append(inbox)
            # With the pub/sub layer the inbox subscribes on its first receive; anything sent
            # before that is lost, so placement learns of us only once we hear ourselves.
            await self._wait_listening()
            if self._stopping.is_set():  # stopped while starting up: never register
                return
            await asyncio.to_thread(self.failover.register)
            self._tasks.append(loop.create_task(self._pace_loop(), name=f"{self.name}-pace"))
            self._tasks.append(loop.create_task(self._produce_loop(), name=f"{self.name}-step"))
            self._tasks.append(loop.create_task(self._monitor_loop(), name=f"{self.name}-mon"))
            self.ready.set()
            log.info(
                "worker %s ready on %s, capacity %d", self.name, self.config.device,
                self.config.capacity,
            )  # fmt: skip
            await self._stopping.wait()
        finally:
            pending = [*self._tasks, *self._background]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            # Wait for a step in flight: whoever uses the engine next must be alone on it.
            await asyncio.to_thread(self._engine_thread.shutdown, wait=True, cancel_futures=True)
            if self.engine is not None:
                await asyncio.to_thread(self.engine.stop_terrain)
                await asyncio.to_thread(self.engine.stop_evolution)
            self.narration.close()
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
            await asyncio.to_thread(self.failover.deregister)
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
                await self.save_snapshot(session)
                await self.storage.save_recording(self.core, session, force=True)
        placed = await asyncio.to_thread(self.failover.handover)
        await self._send_placed(placed)
        for session in list(self.sessions.values()):
            await self._drop_local(session)
        log.info("worker %s handed over %d sessions", self.name, len(placed))

    async def _wait_listening(self) -> None:
        self._probe = uuid.uuid4().hex
        while not self._probe_seen.is_set() and not self._stopping.is_set():
            await self.layer.send(self.inbox, m.Probe(nonce=self._probe).to_message())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.2):
                    await self._probe_seen.wait()

    # --- inbox -----------------------------------------------------------------------------
    async def _inbox_loop(self) -> None:
        # Never cancel receive() between messages: with the pub/sub layer that unsubscribes.
        while True:
            body = await self.layer.receive(self.inbox)
            try:
                self._dispatch(m.parse_inbox(body))
            except m.UnknownMessage as exc:
                log.warning("worker %s: %s", self.name, exc)
            except Exception:
                log.exception("worker %s: bad message %r", self.name, body.get("type"))

    def _dispatch(self, message: m.InboxMessage) -> None:
        if isinstance(message, m.Probe):
            if message.nonce == self._probe:
                self._probe_seen.set()
            return
        if isinstance(message, m.Attach):
            self._on_attach(message)
            return
        session = self.sessions.get(message.session_id)
        if session is None:
            log.debug("worker %s: %s for unknown session", self.name, message.TYPE)
            return
        if isinstance(message, m.End):
            self._spawn(self._end(session, reason=message.reason))
        elif isinstance(message, m.Vote):
            self.votes.audience(session, message)
        elif isinstance(message, m.Unseat):
            self._on_unseat(session, message.slot)
        elif isinstance(message, m.Watch):
            self._spawn(self.outbox.replay_to_spectator(session, message.channel))
        elif (camera := session.cameras.get(message.slot)) is None:
            log.debug("worker %s: %s for an empty seat", self.name, message.TYPE)
        elif isinstance(message, m.Input):
            self._on_input(camera, message)
        elif isinstance(message, m.Prompt):
            self._on_prompt(camera, message)
        elif isinstance(message, m.Choose):
            self._on_choose(session, camera, message)
        elif isinstance(message, m.Say):
            self._on_say(session, camera, message)
        elif isinstance(message, m.Detach):
            self._on_detach(session, camera)

    def _on_attach(self, message: m.Attach) -> None:
        session_id = message.session_id
        held = self.sessions.get(session_id)
        # An attach without a seat is the session's one player's (slot 0); a restore without
        # one (failover, handover) seats whoever its snapshot holds.
        slot = message.slot if message.slot >= 0 or message.restore else 0
        if held is not None:
            # A player's (re)connect, or another player sitting down: the same world goes on.
            if slot >= 0:
                self._spawn(self._seat(held, slot, message.name))
            elif held.status is SessionStatus.LIVE:
                self._spawn(self.outbox.status(session_id, "live"))
            return
        if self._stop_requested:
            return  # shutting down: placement already sends this session elsewhere
        if not session_id or len(self.sessions) >= self.config.capacity:
            self._spawn(self.outbox.status(session_id, "ended", reason="worker_full"))
            return
        session = LiveSession(
            session_id=session_id,
            prompt=message.prompt,
            seed=message.seed,
            world_title=message.world_title,
            persist_key=message.persist_key,
        )
        if slot >= 0:
            session.cameras[slot] = self._camera(session, slot, message.name)
        if self.record:
            session.recorder = Recorder(
                session_id,
                worker=self.name,
                weights=self.config.weights_digest,
                fps=self.config.fps,
            )
        if message.fork_key:
            session.fork = (message.fork_key, message.fork_frame, message.fork_slot)
        self.sessions[session_id] = session
        self._spawn(self._start(session, message))

    def _camera(self, session: LiveSession, slot: int, name: str) -> Camera:
        self._joined += 1
        return Camera(
            session.session_id, slot, name=name or f"Player {slot + 1}", joined=self._joined
        )

    async def _seat(self, session: LiveSession, slot: int, name: str) -> None:
        """Seat a player's camera (a new avatar), or resume it on their reconnect."""
        camera = session.cameras.get(slot)
        if camera is None:
            camera = session.cameras[slot] = self._camera(session, slot, name)
            if session.world_id:
                await self._on_engine(self.core.add_camera, session, camera)
        if session.cameras.get(slot) is not camera or session.status is not SessionStatus.LIVE:
            return  # unseated meanwhile, or the world is still starting (it seats everyone)
        if camera.status is not SessionStatus.LIVE:
            self.core.camera_live(camera, asyncio.get_running_loop().time())
            self._demand.set()
        await self.outbox.status(session.session_id, "live")
        await self.narration.live(session, camera)  # the (re)connected player needs the choices
        await self.outbox.replay_events(session, camera=camera)  # and what was done to the world

    def _on_unseat(self, session: LiveSession, slot: int) -> None:
        camera = session.cameras.pop(slot, None)
        if camera is None:
            return
        camera.status = SessionStatus.ENDED
        self._spawn(self._remove_avatar(session, camera))
        self.votes.unseat(session, slot)

    async def _remove_avatar(self, session: LiveSession, camera: Camera) -> None:
        with contextlib.suppress(Exception):
            await self._on_engine(self.core.remove_camera, session, camera)
        await self.save_snapshot(session)

    def _on_input(self, camera: Camera, message: m.Input) -> None:
        if message.seq < camera.keys_seq:
            return  # out of order: a newer input already arrived
        keys = frozenset(k for k in message.keys if k in KEYS)
        if keys != camera.keys:
            self._demand.set()  # answer new keys with the next step, not the next low buffer
        camera.keys = keys
        camera.keys_seq = message.seq

    def _on_prompt(self, camera: Camera, message: m.Prompt) -> None:
        # refused with an error to the sender alone: "rejected" is moderation's word, and a
        # flood is nobody else's business
        try:
            check_text(message.text)
        except PromptError as exc:
            self._spawn(self.outbox.error(camera, "bad_text", str(exc), seq=message.seq))
            return
        if len(camera.events) >= MAX_EVENTS_QUEUED:
            waiting = "Too many world events are waiting: try again in a moment."
            self._spawn(self.outbox.error(camera, "too_many_events", waiting, seq=message.seq))
            return
        camera.events.append((message.seq, message.text))
        self._demand.set()

    def _on_choose(self, session: LiveSession, camera: Camera, message: m.Choose) -> None:
        refusal = self.votes.choose(session, camera.slot, message)
        if refusal is not None:
            self._spawn(self.outbox.error(camera, *refusal))

    def _on_say(self, session: LiveSession, camera: Camera, message: m.Say) -> None:
        refusal = self.narration.admit_say(session, message)
        if refusal is not None:
            self._spawn(self.outbox.error(camera, *refusal))
            return
        # a refused line's words stayed on the web side: the character refuses without them
        line = None if message.refused else message.text.strip()
        self._spawn(self.narration.character_turn(session, camera, line))

    def _on_detach(self, session: LiveSession, camera: Camera) -> None:
        # Nobody steers a detached camera: it waits (paused) for its player's reconnect.
        camera.keys = frozenset()
        if camera.status is SessionStatus.LIVE:
            camera.status = SessionStatus.PAUSED
            camera.buffered.clear()
            self._spawn(self.save_snapshot(session))

    # --- sessions --------------------------------------------------------------------------
    async def _start(self, session: LiveSession, attach: m.Attach) -> None:
        loop = asyncio.get_running_loop()
        restore = attach.restore
        try:
            if restore:
                await self.outbox.status(session.session_id, "resuming")
                data = await asyncio.to_thread(self.placement.load_snapshot, session.session_id)
                if data is not None:
                    meta, world = unpack_snapshot(data)
                    # Restoring takes milliseconds, unlike a build: a failover's restores queue
                    # back to back on the engine thread instead of one per step in between.
                    await self._on_engine(self.core.restore_world, session, meta, world)
                elif session.prompt:
                    restore = False  # died before its first snapshot: start the world again
                else:
                    await self._end(session, reason="snapshot_lost")
                    return
            if not restore:
                await self.outbox.status(session.session_id, "starting")
                kept = await self.storage.load_kept(session)
                if session.fork is not None:
                    kept = await self.storage.forked_world(self.core, session)
                # One world build queued at a time: builds take seconds on a CPU, and steps
                # for the live sessions get the engine between two of them.
                async with self._building:
                    await self._on_engine(self.core.create_world, session, kept)
                await self.narration.begin(session, attach)
                await self.save_snapshot(session)  # from now on it survives a crash
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
        # Players who sat down while the world was built get their avatars now.
        for camera in list(session.cameras.values()):
            await self._on_engine(self.core.add_camera, session, camera)
        if session.status is SessionStatus.STARTING:
            self.core.go_live(session, loop.time())
            self._demand.set()
        await self.outbox.status(session.session_id, "live")
        self._spawn(self.narration.live(session))

    async def _end(self, session: LiveSession, *, reason: str) -> None:
        """End one session here: free its slot, forget its snapshot, tell its clients."""
        if self.sessions.get(session.session_id) is not session:
            return
        session.status = SessionStatus.ENDED
        self._ending.add(session.session_id)
        try:
            if reason not in m.WORKER_FAILURES:
                await self.storage.keep_world(self.core, session)
            await self.storage.save_recording(self.core, session, final=True)
            await self._drop_local(session)
            await self.storage.release(session)
        finally:
            self._ending.discard(session.session_id)
        await self.outbox.status(session.session_id, "ended", reason=reason)
        log.info("worker %s: session %s ended (%s)", self.name, session.session_id, reason)
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self.placement.delete_thumbnail, session.session_id)

    async def _drop_local(self, session: LiveSession) -> None:
        """Forget a session on this worker only (placement untouched)."""
        if self.sessions.get(session.session_id) is session:
            del self.sessions[session.session_id]
            self.core.session_fps.pop(session.session_id, None)
            self.narration.drop(session.session_id)
        session.status = SessionStatus.ENDED
        if session.world_id:
            world_id, session.world_id = session.world_id, ""
            with contextlib.suppress(Exception):
                await self._on_engine(self.core.drop_world, world_id)

    async def save_snapshot(self, session: LiveSession) -> None:
        await self.storage.save_snapshot(self.core, session)

    async def world_change(self, session: LiveSession, event_text: str | None) -> dict:
        """Apply an event (if any) on the engine thread; the world's description after it."""
        world = await self._on_engine(self.core.apply_and_describe, session.world_id, event_text)
        if event_text:
            for camera in session.cameras.values():
                camera.stepped_keys = None  # a cut: the next frame already shows the change
            self._demand.set()
        return world

    # --- the loops that drive the core -----------------------------------------------------
    async def _pace_loop(self) -> None:
        """Every tick, each live camera shows its next buffered frame."""
        loop = asyncio.get_running_loop()
        period = 1.0 / self.config.fps
        next_tick = last_status = loop.time()
        while True:
            now = loop.time()
            outputs = self.core.pace(now)
            await self.outbox.frames(outputs.frames)
            if outputs.refill:
                self._demand.set()
            if now - last_status >= STATUS_EVERY_S:
                last_status = now
                self._spawn(self.outbox.fps_to_live())
            next_tick += period
            if loop.time() - next_tick > 2 * period:
                next_tick = loop.time()  # fell behind: skip ticks rather than burst to catch up
            await asyncio.sleep(max(0.0, next_tick - loop.time()))

    async def _produce_loop(self) -> None:
        """Step after step, for whoever needs frames; woken early by inputs and low buffers."""
        loop = asyncio.get_running_loop()
        period = 1.0 / self.config.fps
        while True:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that lands
            # as the event is set, and stop() would wait for this loop forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(period):
                    await self._demand.wait()
            self._demand.clear()
            batch = self.core.schedule()
            if batch is not None:
                started = loop.time()
                try:
                    result = await self._on_engine(self.core.execute, batch)
                except Exception:
                    log.exception("worker %s: step failed", self.name)
                else:
                    took = loop.time() - started
                    await self._deliver(self.core.collect(batch, result, loop.time(), took))
            for session in self.core.snapshots_due(self.config.snapshot_every_s):
                try:
                    await self.save_snapshot(session)
                except Exception:
                    log.exception("worker %s: snapshot of %s failed", self.name, session.session_id)
            await self.storage.save_recordings(self.core, list(self.sessions.values()))

    async def _deliver(self, outputs: StepOutputs) -> None:
        # The event answers go before the frames that show them (already buffered, so the
        # pacer never shows a frame from before an answer after the answer's event message).
        for session_id, event in outputs.events:
            await self.outbox.send(session_id, event)
        await self.outbox.frames(outputs.frames)
        for session_id in outputs.failed:
            if session_id in self.sessions:
                await self._end(self.sessions[session_id], reason="worker_error")

    async def _monitor_loop(self) -> None:
        logged = 0.0
        while True:
            try:
                await self._monitor_once()
            except Exception:
                log.exception("worker %s: heartbeat/failover round failed", self.name)
            if self.sessions and time.monotonic() - logged >= STATS_EVERY_S:
                logged = time.monotonic()  # what operators (and bench/play.py) read
                log.info("worker %s stats %s", self.name, json.dumps(self.stats()))
            await asyncio.sleep(HEARTBEAT_S)

    async def _monitor_once(self) -> None:
        alive = await asyncio.to_thread(
            self.failover.beat, load=self.core.cameras(), fps=self.core.achieved_fps
        )
        if not alive:
            # We were reaped (stalled past the deadline): our sessions belong to others now.
            log.warning("worker %s was reaped; dropping its sessions and re-registering", self.name)
            for session in list(self.sessions.values()):
                await self._drop_local(session)
            await asyncio.to_thread(self.failover.register)
        await self._send_placed(await asyncio.to_thread(self.failover.reap))
        held = set(self.sessions) | self._ending
        for session_id in await asyncio.to_thread(self.failover.to_adopt, held):
            if session_id not in self.sessions and session_id not in self._ending:
                log.warning("worker %s: adopting %s from its snapshot", self.name, session_id)
                self._dispatch(m.Attach(session_id=session_id, restore=True))

    async def _send_placed(self, placed: list[tuple[str, str]]) -> None:
        """Sessions re-placed by failover or handover: each resumes on its new worker."""
        for session_id, target in placed:
            await self.outbox.status(session_id, "resuming", worker=target)
            attach = m.Attach(session_id=session_id, restore=True)
            if target == self.name:
                self._dispatch(attach)
            else:
                await self.layer.send(m.worker_channel(target), attach.to_message())

    async def _on_engine(self, fn, *args):
        """Run `fn` on the engine thread, the only one that touches the engine."""
        return await asyncio.get_running_loop().run_in_executor(self._engine_thread, fn, *args)

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    @property
    def achieved_fps(self) -> float:
        return self.core.achieved_fps if self.core else 0.0

    def stats(self) -> dict:
        """What operators (and bench/play.py) read, one JSON line every few seconds."""
        core = self.core.stats() if self.core else {"players": 0, "fps": 0.0, "chunk_cap": 1}
        return {"name": self.name, "sessions": len(self.sessions), **core,
                **self.narration.stats()}  # fmt: skip
