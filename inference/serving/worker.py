"""The inference worker process: the channel-layer glue around the batching loop.

One worker = one engine on one device. It listens on its inbox (``worker_channel(name)``) for
the typed messages of ``inference.serving.messages``, keeps every attached session in an
``EngineCore`` (``core.py``) and sends what the core returns to each session's group. Two loops
drive the core: the producer (``schedule`` → ``execute`` on the engine thread → ``collect``)
keeps the frame buffers filled, the pacer (``pace``) shows each live session its next frame at
the target frame rate. Stepping never holds up the ticks, and an answer to new keys goes out
the moment its step lands.

Around the loops: starting, restoring and ending sessions; story picks and dialogue
(``inference.narrative.narrator``: a language model, the grammar as its fallback), generated on
the narrative runner's own thread (bounded queue, deadline per request, sessions in turn) and
streamed to the chat as partial lines; snapshots of each session every
~2 s (``snapshot.py``); failover and a graceful handover on stop (``failover.py``).
Django-free: the web side and the ``inference_worker`` command pass in a channel layer and a
placement.
"""

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from inference.narrative import engine as narrative
from inference.narrative.narrator import Answer, Narrator
from inference.narrative.runner import GenerationRunner, QueueFull
from inference.serving import messages as m
from inference.serving.core import EngineCore, StepOutputs
from inference.serving.failover import HEARTBEAT_S, Failover
from inference.serving.placement import Placement
from inference.serving.session import LiveSession, SessionStatus
from inference.serving.snapshot import SnapshotFormatError, unpack_snapshot
from inference.world.engine import PromptError, SnapshotError, WorldEngine
from inference.world.spec import KEYS

log = logging.getLogger(__name__)

STATUS_EVERY_S = 2.0  # live sessions hear the achieved fps this often
MAX_EVENTS_QUEUED = 8  # text events waiting per session; more are rejected, not queued
MAX_SAYS_QUEUED = 3  # player lines waiting for the character's answer; more get an error
# Deadlines per generation request (queue wait included): past them the grammar answers.
OFFER_TIMEOUT_S = 6.0
NARRATE_TIMEOUT_S = 4.0
REPLY_TIMEOUT_S = 5.0


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
        narrator: Narrator | None = None,
        screen: Callable[[str], bool] | None = None,
    ) -> None:
        """``narrator``: who writes stories and replies (default: ``Narrator.from_env``, which
        reads ``NARRATIVE_LM`` and friends). ``screen(text) -> bool``: may a generated line be
        shown; the web side passes moderation's play screening (this package is Django-free)."""
        if capacity < 1 or fps <= 0:
            raise ValueError("capacity must be >= 1 and fps > 0")
        self.name = name
        self.layer = channel_layer
        self.placement = placement
        self.failover = Failover(placement, name=name, device=device, capacity=capacity)
        self.device = device
        self.capacity = capacity
        self.fps = fps
        self.engine = engine
        self.weights = weights
        self.snapshot_every_s = snapshot_every_s
        self._core_options = dict(
            jpeg_quality=jpeg_quality, max_batch=max_batch, step_budget_s=step_budget_s
        )
        self.inbox = m.worker_channel(name)
        self.sessions: dict[str, LiveSession] = {}  # shared with the core
        self.core: EngineCore | None = None
        self.ready = asyncio.Event()
        self._stopping = asyncio.Event()
        self._stopped = asyncio.Event()
        self._engine_thread = ThreadPoolExecutor(1, thread_name_prefix=f"engine-{name}")
        # Story options and replies take a while to generate: off the loop and the engine thread.
        self.narrator = narrator if narrator is not None else Narrator.from_env()
        if screen is not None:
            self.narrator.screen = screen
        self._runner = GenerationRunner(
            name=f"narrative-{name}", per_session=4, max_jobs=max(16, 4 * capacity)
        )
        self._narrating: dict[str, asyncio.Lock] = {}  # one narrative step at a time per session
        self._says_waiting: dict[str, int] = {}
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
        try:
            if self.engine is None:
                self.engine = await loop.run_in_executor(
                    self._engine_thread, lambda: WorldEngine.load(self.device, self.weights)
                )
            self.core = EngineCore(
                self.engine, fps=self.fps, sessions=self.sessions, **self._core_options
            )
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
            log.info("worker %s ready on %s, capacity %d", self.name, self.device, self.capacity)
            await self._stopping.wait()
        finally:
            pending = [*self._tasks, *self._background]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            # Wait for a step in flight: whoever uses the engine next must be alone on it.
            await asyncio.to_thread(self._engine_thread.shutdown, wait=True, cancel_futures=True)
            self._runner.close()
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
                await self._save_snapshot(session)
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
                await asyncio.wait_for(self._probe_seen.wait(), 0.2)

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
        elif isinstance(message, m.Input):
            self._on_input(session, message)
        elif isinstance(message, m.Prompt):
            self._on_prompt(session, message)
        elif isinstance(message, m.Choose):
            self._on_choose(session, message)
        elif isinstance(message, m.Say):
            self._on_say(session, message)
        elif isinstance(message, m.Detach):
            self._on_detach(session)
        elif isinstance(message, m.End):
            self._spawn(self._end(session, reason=message.reason))

    def _on_attach(self, message: m.Attach) -> None:
        session_id = message.session_id
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
            prompt=message.prompt,
            seed=message.seed,
            world_title=message.world_title,
            joined=self._joined,
        )
        self.sessions[session_id] = session
        self._spawn(self._start(session, message))

    def _on_input(self, session: LiveSession, message: m.Input) -> None:
        if message.seq < session.keys_seq:
            return  # out of order: a newer input already arrived
        keys = frozenset(k for k in message.keys if k in KEYS)
        if keys != session.keys:
            self._demand.set()  # answer new keys with the next step, not the next low buffer
        session.keys = keys
        session.keys_seq = message.seq

    def _on_prompt(self, session: LiveSession, message: m.Prompt) -> None:
        if message.text is None or len(session.events) >= MAX_EVENTS_QUEUED:
            reason = "bad_text" if message.text is None else "too_many_events"
            event = m.Event(seq=message.seq, status="rejected", reason=reason)
            self._spawn(self._send(session.session_id, event))
            return
        session.events.append((message.seq, message.text))
        self._demand.set()

    def _on_choose(self, session: LiveSession, message: m.Choose) -> None:
        if not isinstance(session.narrative, narrative.Story):
            self._spawn(self._error(session.session_id, "unsupported", "No story in this world."))
            return
        try:
            # Taken off the offer at once: a double click or a stale tab gets an error.
            story, picked = narrative.story_pick(
                session.narrative, message.choice_id, message.option
            )
        except narrative.ChoiceError as exc:
            self._spawn(self._error(session.session_id, "stale_choice", str(exc)))
            return
        session.narrative = story
        self._spawn(self._story_step(session, picked))

    def _on_say(self, session: LiveSession, message: m.Say) -> None:
        text, sid = message.text, session.session_id
        if not isinstance(session.narrative, narrative.Character):
            self._spawn(self._error(sid, "unsupported", "No one here to talk to."))
        elif text is None or not text.strip() or len(text) > m.MAX_SAY_CHARS:
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
    async def _start(self, session: LiveSession, attach: m.Attach) -> None:
        loop = asyncio.get_running_loop()
        restore = attach.restore
        try:
            if restore:
                await self._status(session.session_id, "resuming")
                data = await asyncio.to_thread(self.placement.load_snapshot, session.session_id)
                if data is not None:
                    meta, world = unpack_snapshot(data)
                    # Restoring takes milliseconds, unlike a build: a failover's restores queue
                    # back to back on the engine thread instead of one per step in between.
                    await loop.run_in_executor(
                        self._engine_thread, self.core.restore_world, session, meta, world
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
                    await loop.run_in_executor(self._engine_thread, self.core.create_world, session)
                await self._begin_narrative(session, attach)
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
        self.core.go_live(session, asyncio.get_running_loop().time())
        self._demand.set()

    async def _save_snapshot(self, session: LiveSession) -> None:
        if not session.world_id:
            return
        session.last_snapshot = time.monotonic()
        data = await asyncio.get_running_loop().run_in_executor(
            self._engine_thread, self.core.snapshot_world, session
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
            self.core.session_fps.pop(session.session_id, None)
            self._narrating.pop(session.session_id, None)
            self._says_waiting.pop(session.session_id, None)
            self._runner.drop(session.session_id)
        session.status = SessionStatus.ENDED
        if session.world_id:
            world_id, session.world_id = session.world_id, ""
            with contextlib.suppress(Exception):
                await asyncio.get_running_loop().run_in_executor(
                    self._engine_thread, self.core.drop_world, world_id
                )

    # --- story and dialogue (inference.narrative) ------------------------------------------
    async def _begin_narrative(self, session: LiveSession, attach: m.Attach) -> None:
        if attach.category not in ("stories", "characters"):
            return
        try:
            world = await self._world_change(session, None)
            card = dataclasses.asdict(attach.character) if attach.character else None
            session.narrative = narrative.begin(
                attach.category, world, opening=attach.story_opening, character=card
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
                    await self._send(session.session_id, m.Line(speaker=state.name, text=greeting))
            except Exception:
                log.exception("worker %s: narrative of %s failed", self.name, session.session_id)

    async def _story_step(self, session: LiveSession, picked: narrative.Option) -> None:
        """A pick: its event changes the world, a line narrates it, the next pair is offered."""
        async with self._narrating.setdefault(session.session_id, asyncio.Lock()):
            try:
                world = await self._world_change(session, picked.event_text)
                story = session.narrative
                answer = await self._generate(
                    session,
                    lambda deadline: self.narrator.narrate(story, picked, world, deadline),
                    NARRATE_TIMEOUT_S,
                )
                if self.sessions.get(session.session_id) is not session:
                    return
                session.narrative = answer.state
                await self._offer(session)
            except Exception:
                log.exception("worker %s: story step of %s failed", self.name, session.session_id)

    async def _offer(self, session: LiveSession) -> None:
        world = await self._world_change(session, None)
        story, seed = session.narrative, session.seed
        answer = await self._generate(
            session,
            lambda deadline: self.narrator.offer(story, world, seed, deadline),
            OFFER_TIMEOUT_S,
        )
        if self.sessions.get(session.session_id) is not session:
            return  # ended or moved while the options were written
        session.narrative = answer.state
        await self._save_snapshot(session)  # a pick after a failover finds this pair on offer
        await self._choices(session.session_id, answer.state)

    async def _character_turn(self, session: LiveSession, line: str) -> None:
        sid = session.session_id
        try:
            async with self._narrating.setdefault(sid, asyncio.Lock()):
                await self._send(sid, m.Line(speaker="you", text=line))
                world = await self._world_change(session, None)
                character, seed = session.narrative, session.seed
                loop = asyncio.get_running_loop()
                partials: asyncio.Queue[str] = asyncio.Queue()

                def on_partial(text: str) -> None:  # called on the runner's thread
                    loop.call_soon_threadsafe(partials.put_nowait, text)

                answer = await self._generate(
                    session,
                    lambda deadline: self.narrator.reply(
                        character, world, line, seed, deadline, on_partial
                    ),
                    REPLY_TIMEOUT_S,
                    partials=partials,
                    speaker=character.name,
                )
                if self.sessions.get(sid) is not session:
                    return
                session.narrative = answer.state
                if answer.reply.event_text:
                    await self._world_change(session, answer.reply.event_text)
                await self._send(sid, m.Line(speaker=character.name, text=answer.reply.text))
        except Exception:
            log.exception("worker %s: dialogue of %s failed", self.name, sid)
        finally:
            if sid in self._says_waiting:
                self._says_waiting[sid] = max(0, self._says_waiting[sid] - 1)

    async def _generate(
        self,
        session: LiveSession,
        job: Callable[[float], Answer],
        timeout_s: float,
        *,
        partials: asyncio.Queue | None = None,
        speaker: str = "",
    ) -> Answer:
        """Run one narrative job on the runner (sessions in turn) and await its answer, sending
        the partial lines it streams meanwhile; the session's status learns who answered."""
        try:
            future = asyncio.wrap_future(
                self._runner.submit(session.session_id, job, timeout_s=timeout_s)
            )
        except QueueFull:
            # Every place taken: the grammar answers at once (its deadline has passed).
            future = asyncio.ensure_future(asyncio.to_thread(job, time.monotonic()))
        while partials is not None and not future.done():
            getter = asyncio.ensure_future(partials.get())
            done, _ = await asyncio.wait({future, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                line = m.Line(speaker=speaker, text=getter.result(), partial=True)
                await self._send(session.session_id, line)
            else:
                getter.cancel()  # the final line follows; later partials are dropped
        answer = await future
        if answer.backend != session.narrator:
            session.narrator = answer.backend
            if session.status is SessionStatus.LIVE:
                await self._status(session.session_id, "live")
        return answer

    async def _world_change(self, session: LiveSession, event_text: str | None) -> dict:
        """Apply an event (if any) on the engine thread; the world's description after it."""
        world = await asyncio.get_running_loop().run_in_executor(
            self._engine_thread, self.core.apply_and_describe, session.world_id, event_text
        )
        if event_text:
            session.stepped_keys = None  # a cut: the next frame already shows the change
            self._demand.set()
        return world

    # --- the loops that drive the core -----------------------------------------------------
    async def _pace_loop(self) -> None:
        """Every tick, each live session shows its next buffered frame."""
        loop = asyncio.get_running_loop()
        period = 1.0 / self.fps
        next_tick = last_status = loop.time()
        while True:
            now = loop.time()
            outputs = self.core.pace(now)
            await self._send_frames(outputs.frames)
            if outputs.refill:
                self._demand.set()
            if now - last_status >= STATUS_EVERY_S:
                last_status = now
                self._spawn(self._broadcast_fps())
            next_tick += period
            if loop.time() - next_tick > 2 * period:
                next_tick = loop.time()  # fell behind: skip ticks rather than burst to catch up
            await asyncio.sleep(max(0.0, next_tick - loop.time()))

    async def _produce_loop(self) -> None:
        """Step after step, for whoever needs frames; woken early by inputs and low buffers."""
        loop = asyncio.get_running_loop()
        period = 1.0 / self.fps
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._demand.wait(), period)
            self._demand.clear()
            batch = self.core.schedule()
            if batch is not None:
                started = loop.time()
                try:
                    result = await loop.run_in_executor(
                        self._engine_thread, self.core.execute, batch
                    )
                except Exception:
                    log.exception("worker %s: step failed", self.name)
                else:
                    took = loop.time() - started
                    await self._deliver(self.core.collect(batch, result, loop.time(), took))
            for session in self.core.snapshots_due(self.snapshot_every_s):
                try:
                    await self._save_snapshot(session)
                except Exception:
                    log.exception("worker %s: snapshot of %s failed", self.name, session.session_id)

    async def _deliver(self, outputs: StepOutputs) -> None:
        # The event answers go before the frames that show them (already buffered, so the
        # pacer never shows a frame from before an answer after the answer's event message).
        for session_id, event in outputs.events:
            await self._send(session_id, event)
        await self._send_frames(outputs.frames)
        for session_id in outputs.failed:
            if session_id in self.sessions:
                await self._end(self.sessions[session_id], reason="worker_error")

    async def _monitor_loop(self) -> None:
        while True:
            try:
                await self._monitor_once()
            except Exception:
                log.exception("worker %s: heartbeat/failover round failed", self.name)
            await asyncio.sleep(HEARTBEAT_S)

    async def _monitor_once(self) -> None:
        alive = await asyncio.to_thread(
            self.failover.beat, load=len(self.sessions), fps=self.core.achieved_fps
        )
        if not alive:
            # We were reaped (stalled past the deadline): our sessions belong to others now.
            log.warning("worker %s was reaped; dropping its sessions and re-registering", self.name)
            for session in list(self.sessions.values()):
                await self._drop_local(session)
            await asyncio.to_thread(self.failover.register)
        await self._send_placed(await asyncio.to_thread(self.failover.reap))
        for session_id in await asyncio.to_thread(self.failover.to_adopt, set(self.sessions)):
            if session_id not in self.sessions:
                log.warning("worker %s: adopting %s from its snapshot", self.name, session_id)
                self._dispatch(m.Attach(session_id=session_id, restore=True))

    async def _send_placed(self, placed: list[tuple[str, str]]) -> None:
        """Sessions re-placed by failover or handover: each resumes on its new worker."""
        for session_id, target in placed:
            await self._status(session_id, "resuming", worker=target)
            attach = m.Attach(session_id=session_id, restore=True)
            if target == self.name:
                self._dispatch(attach)
            else:
                await self.layer.send(m.worker_channel(target), attach.to_message())

    # --- messages to clients ---------------------------------------------------------------
    async def _send_frames(self, frames: list[tuple[str, bytes]]) -> None:
        sends = [
            self.layer.group_send(m.session_group(sid), m.Frame(data=data).to_message())
            for sid, data in frames
        ]
        for result in await asyncio.gather(*sends, return_exceptions=True):
            if isinstance(result, Exception):
                log.warning("worker %s: frame send failed: %s", self.name, result)

    async def _status(
        self, session_id: str, state: str, *, reason: str | None = None, worker: str | None = None
    ) -> None:
        fps = round(self.core.session_fps.get(session_id, 0.0), 1) if self.core else 0.0
        held = self.sessions.get(session_id)
        narrator = held.narrator if held is not None and held.narrator else None
        status = m.Status(
            state=state, fps=fps, reason=reason, worker=worker or self.name, narrator=narrator
        )
        await self._send(session_id, status)

    async def _choices(self, session_id: str, story: narrative.Story) -> None:
        await self._send(session_id, m.Choices(**narrative.choices_message(story)))

    async def _error(self, session_id: str, code: str, message: str) -> None:
        await self._send(session_id, m.Error(code=code, message=message))

    async def _send(self, session_id: str, message: m.Message) -> None:
        """Send to a session's group; a failed send is logged, never raised into the loop."""
        try:
            await self.layer.group_send(m.session_group(session_id), message.to_message())
        except Exception:
            log.exception("worker %s: %s to %s failed", self.name, message.TYPE, session_id)

    async def _broadcast_fps(self) -> None:
        for session in list(self.sessions.values()):
            if session.status is SessionStatus.LIVE:
                await self._status(session.session_id, "live")

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    @property
    def achieved_fps(self) -> float:
        return self.core.achieved_fps if self.core else 0.0

    def stats(self) -> dict:
        core = self.core
        return {
            "name": self.name,
            "sessions": len(self.sessions),
            "fps": round(self.achieved_fps, 2),
            "chunk_cap": core.controller.cap if core else 1,
            "frames_sent": core.frames_sent if core else 0,
            "frames_discarded": sum(s.frames_discarded for s in self.sessions.values()),
            "narrative_waiting": self._runner.waiting(),
            "narrative_backends": self.narrator.backends,
        }
