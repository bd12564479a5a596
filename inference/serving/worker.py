"""The inference worker process: the channel-layer glue around the batching loop.

One worker = one engine on one device. It listens on its inbox (``worker_channel(name)``) for
the typed messages of ``inference.serving.messages``, keeps every attached session in an
``EngineCore`` (``core.py``) and sends what the core returns: each seated player's frames to
their camera's group, everything else to the session's group. A shared session is one world
with a camera per seated player; its players vote on story picks (``Ballot``) and talk to its
character in turn. Two loops
drive the core: the producer (``schedule`` → ``execute`` on the engine thread → ``collect``)
keeps the frame buffers filled, the pacer (``pace``) shows each live session its next frame at
the target frame rate. Stepping never holds up the ticks, and an answer to new keys goes out
the moment its step lands.

Around the loops: starting, restoring and ending sessions; story picks and dialogue
(``inference.narrative.narrator``: a language model, the grammar as its fallback), generated on
the narrative runner's threads (bounded queue, deadline per request, sessions in turn) and
streamed to the chat as partial lines; snapshots of each session every
~2 s (``snapshot.py``); failover and a graceful handover on stop (``failover.py``).
Django-free: the web side and the ``inference_worker`` command pass in a channel layer and a
placement.
"""

import asyncio
import contextlib
import dataclasses
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import torch

from inference.narrative import characters
from inference.narrative import engine as narrative
from inference.narrative.narrator import Answer, Narrator
from inference.narrative.runner import GenerationRunner, QueueFull
from inference.serving import messages as m
from inference.serving.core import EngineCore, StepOutputs
from inference.serving.failover import HEARTBEAT_S, Failover
from inference.serving.placement import Placement
from inference.serving.recording import CHECKPOINT_EVERY_S, Recorder, Replay, read_recording
from inference.serving.session import Ballot, Camera, LiveSession, SessionStatus
from inference.serving.snapshot import SnapshotFormatError, unpack_snapshot
from inference.world.engine import PromptError, SnapshotError, WorldEngine, check_text
from inference.world.spec import KEYS

log = logging.getLogger(__name__)
STATS_EVERY_S = 5.0  # how often a serving worker logs its stats() (one JSON line)

STATUS_EVERY_S = 2.0  # live sessions hear the achieved fps this often
MAX_EVENTS_QUEUED = 8  # text events waiting per session; more get an error, not queued
# Audience votes go out as one tally this often at most: each re-sent the pair to every socket
# of the session, so a spectator voting 60 times a second made 60 broadcasts a second.
AUDIENCE_TALLY_EVERY_S = 0.5
MAX_SAYS_QUEUED = 3  # player lines waiting for the character's answer; more get an error
# Deadlines per generation request (queue wait included): past them the grammar answers.
OFFER_TIMEOUT_S = 6.0
REPLY_TIMEOUT_S = 5.0
VOTE_WINDOW_S = 15.0  # a shared story's vote closes this long after its first vote


class WorldStore(Protocol):
    """The media store (the web side passes S3 or local media): where Live worlds are kept
    between sessions, and where recordings are written."""

    def load(self, key: str) -> bytes | None: ...
    def save(self, key: str, data: bytes) -> None: ...
    def load_all(self, prefix: str) -> list[bytes]: ...  # every file under it, by name


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
        world_store: WorldStore | None = None,
        vote_window_s: float = VOTE_WINDOW_S,
        threads: int = 1,
        record: bool = True,
        weights_digest: str = "",
    ) -> None:
        """``narrator``: who writes stories and replies (default: ``Narrator.from_env``, which
        reads ``NARRATIVE_LM`` and friends). ``screen(text) -> bool``: may a generated line be
        shown; the web side passes moderation's play screening (this package is Django-free).
        ``world_store``: where Live worlds are kept between sessions (None: not kept).
        ``vote_window_s``: a shared story's vote closes this long after its first vote.
        ``threads``: torch's intra-op threads in this process. One by default: a frame's ops are
        too small to split, and a second thread only contends with the language model's and the
        event loop's for the cores. ``record``: write each session's recording to the
        world store; ``weights_digest`` names the weights in it (a replay on others warns)."""
        if capacity < 1 or fps <= 0:
            raise ValueError("capacity must be >= 1 and fps > 0")
        if threads < 1:
            raise ValueError("threads must be >= 1")
        self.threads = threads
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
        self.world_store = world_store
        self.record = record and world_store is not None
        self.weights_digest = weights_digest
        self.vote_window_s = vote_window_s
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
            name=f"narrative-{name}", per_session=4, max_jobs=max(16, 4 * capacity),
            concurrency=self.narrator.concurrency,  # NARRATIVE_LM_CONCURRENCY (one per session)
        )  # fmt: skip
        self._narrating: dict[str, asyncio.Lock] = {}  # one narrative step at a time per session
        self._says_waiting: dict[str, int] = {}
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
            target=self.narrator.warm_up, name=f"{self.name}-lm-load", daemon=True
        ).start()
        try:
            # process-wide; set on the engine thread too, which keeps it for its own ops
            torch.set_num_threads(self.threads)
            await loop.run_in_executor(self._engine_thread, torch.set_num_threads, self.threads)
            if self.engine is None:
                self.engine = await loop.run_in_executor(
                    self._engine_thread, lambda: WorldEngine.load(self.device, self.weights)
                )
            self.core = EngineCore(
                self.engine, fps=self.fps, sessions=self.sessions, **self._core_options
            )
            # Terrain ahead of the players grows on its own thread: a step never makes any.
            self.engine.start_terrain()
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
            if self.engine is not None:
                await asyncio.to_thread(self.engine.stop_terrain)
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
                await self._save_recording(session, force=True)
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
            self._on_vote(session, message)
        elif isinstance(message, m.Unseat):
            self._on_unseat(session, message.slot)
        elif isinstance(message, m.Watch):
            self._spawn(self._replay_to_spectator(session, message.channel))
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
                self._spawn(self._status(session_id, "live"))
            return
        if self._stop_requested:
            return  # shutting down: placement already sends this session elsewhere
        if not session_id or len(self.sessions) >= self.capacity:
            self._spawn(self._status(session_id, "ended", reason="worker_full"))
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
                session_id, worker=self.name, weights=self.weights_digest, fps=self.fps
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
                await asyncio.get_running_loop().run_in_executor(
                    self._engine_thread, self.core.add_camera, session, camera
                )
        if session.cameras.get(slot) is not camera or session.status is not SessionStatus.LIVE:
            return  # unseated meanwhile, or the world is still starting (it seats everyone)
        if camera.status is not SessionStatus.LIVE:
            self.core.camera_live(camera, asyncio.get_running_loop().time())
            self._demand.set()
        await self._status(session.session_id, "live")
        await self._narrative_live(session, camera)  # the (re)connected player needs the choices
        await self._replay_events(session, camera=camera)  # and what was done to the world

    def _on_unseat(self, session: LiveSession, slot: int) -> None:
        camera = session.cameras.pop(slot, None)
        if camera is None:
            return
        session.ballot.players.pop(slot, None)
        camera.status = SessionStatus.ENDED
        self._spawn(self._remove_avatar(session, camera))
        self._maybe_close_vote(session)

    async def _remove_avatar(self, session: LiveSession, camera: Camera) -> None:
        with contextlib.suppress(Exception):
            await asyncio.get_running_loop().run_in_executor(
                self._engine_thread, self.core.remove_camera, session, camera
            )
        await self._save_snapshot(session)

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
            self._spawn(self._error(camera, "bad_text", str(exc), seq=message.seq))
            return
        if len(camera.events) >= MAX_EVENTS_QUEUED:
            waiting = "Too many world events are waiting: try again in a moment."
            self._spawn(self._error(camera, "too_many_events", waiting, seq=message.seq))
            return
        camera.events.append((message.seq, message.text))
        self._demand.set()

    def _on_choose(self, session: LiveSession, camera: Camera, message: m.Choose) -> None:
        """A player's vote; with everyone voted (alone: at once) or the window closed, the
        majority is the pick."""
        story = session.narrative
        if not isinstance(story, narrative.Story):
            self._spawn(self._error(camera, "unsupported", "No story in this world."))
            return
        if not story.options or message.choice_id != story.choice_id or message.option < 0:
            self._spawn(self._error(camera, "stale_choice", "That choice is no longer on offer."))
            return
        ballot = self._ballot(session, story)
        ballot.players[camera.slot] = message.option
        if ballot.closes_at is None:
            ballot.closes_at = asyncio.get_running_loop().time() + self.vote_window_s
            self._spawn(self._close_vote_later(session, ballot))
        if not self._maybe_close_vote(session):
            self._spawn(self._choices(session))

    def _on_vote(self, session: LiveSession, message: m.Vote) -> None:
        """A spectator's vote: counted apart, as the audience; it never closes the vote."""
        story = session.narrative
        if not isinstance(story, narrative.Story) or not story.options:
            return
        if message.choice_id != story.choice_id or message.option < 0 or not message.voter:
            return
        ballot = self._ballot(session, story)
        if ballot.audience.get(message.voter) == message.option:
            return  # the same vote again changes no count
        if message.voter in ballot.audience or len(ballot.audience) < 10_000:
            ballot.audience[message.voter] = message.option
            if not session.audience_tally_due:
                session.audience_tally_due = True
                self._spawn(self._audience_tally(session))

    async def _audience_tally(self, session: LiveSession) -> None:
        await asyncio.sleep(AUDIENCE_TALLY_EVERY_S)
        session.audience_tally_due = False
        await self._choices(session)

    def _ballot(self, session: LiveSession, story: narrative.Story) -> Ballot:
        if session.ballot.choice_id != story.choice_id:
            session.ballot = Ballot(choice_id=story.choice_id)
        return session.ballot

    def _maybe_close_vote(self, session: LiveSession, *, timed_out: bool = False) -> bool:
        """Close the vote when every seated player voted (or its time is up): the majority's
        option is picked. -> whether it closed."""
        story, ballot = session.narrative, session.ballot
        if not isinstance(story, narrative.Story) or ballot.choice_id != story.choice_id:
            return False
        if not ballot.players:
            return False
        everyone = set(session.cameras) <= set(ballot.players)
        if not (everyone or timed_out):
            return False
        try:
            # Taken off the offer at once: a late vote or a stale tab gets an error.
            story, picked = narrative.story_pick(story, ballot.choice_id, ballot.winner())
        except narrative.ChoiceError:
            return False
        session.narrative = story
        session.ballot = Ballot()
        session.last_pick = picked.label
        self._spawn(self._story_step(session, picked))
        return True

    async def _close_vote_later(self, session: LiveSession, ballot: Ballot) -> None:
        await asyncio.sleep(max(0.0, ballot.closes_at - asyncio.get_running_loop().time()))
        if self.sessions.get(session.session_id) is session and session.ballot is ballot:
            self._maybe_close_vote(session, timed_out=True)

    def _on_say(self, session: LiveSession, camera: Camera, message: m.Say) -> None:
        text, sid = message.text, session.session_id
        if not isinstance(session.narrative, narrative.Character):
            self._spawn(self._error(camera, "unsupported", "No one here to talk to."))
        elif not message.refused and (
            text is None or not text.strip() or len(text) > m.MAX_SAY_CHARS
        ):
            self._spawn(self._error(camera, "bad_text", "Say something (500 characters at most)."))
        elif self._says_waiting.get(sid, 0) >= MAX_SAYS_QUEUED * max(1, len(session.cameras)):
            self._spawn(self._error(camera, "too_many_messages", "Wait for an answer first."))
        else:
            self._says_waiting[sid] = self._says_waiting.get(sid, 0) + 1
            # a refused line's words stayed on the web side: the character refuses without them
            line = None if message.refused else text.strip()
            self._spawn(self._character_turn(session, camera, line))

    def _on_detach(self, session: LiveSession, camera: Camera) -> None:
        # Nobody steers a detached camera: it waits (paused) for its player's reconnect.
        camera.keys = frozenset()
        if camera.status is SessionStatus.LIVE:
            camera.status = SessionStatus.PAUSED
            camera.buffered.clear()
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
                kept = await self._load_kept(session)
                if session.fork is not None:
                    kept = await self._forked_world(session)
                # One world build queued at a time: builds take seconds on a CPU, and steps
                # for the live sessions get the engine between two of them.
                async with self._building:
                    await loop.run_in_executor(
                        self._engine_thread, self.core.create_world, session, kept
                    )
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
        # Players who sat down while the world was built get their avatars now.
        for camera in list(session.cameras.values()):
            await loop.run_in_executor(self._engine_thread, self.core.add_camera, session, camera)
        if session.status is SessionStatus.STARTING:
            self.core.go_live(session, loop.time())
            self._demand.set()
        await self._status(session.session_id, "live")
        self._spawn(self._narrative_live(session))

    async def _load_kept(self, session: LiveSession) -> bytes | None:
        """A Live world's state from its last session (None: a fresh world)."""
        if not session.persist_key or self.world_store is None:
            return None
        try:
            return await asyncio.to_thread(self.world_store.load, session.persist_key)
        except Exception:
            log.exception("worker %s: could not load kept world %s", self.name, session.persist_key)
            return None

    async def _keep_world(self, session: LiveSession) -> None:
        """At the end of a Live world's session: keep the world for the next visitor."""
        if not session.persist_key or self.world_store is None or not session.world_id:
            return
        try:
            data = await asyncio.get_running_loop().run_in_executor(
                self._engine_thread, self.core.keep_world, session
            )
            if data:
                await asyncio.to_thread(self.world_store.save, session.persist_key, data)
        except Exception:
            log.exception("worker %s: could not keep world %s", self.name, session.persist_key)

    async def _save_snapshot(self, session: LiveSession) -> None:
        if not session.world_id:
            return
        session.last_snapshot = time.monotonic()
        data = await asyncio.get_running_loop().run_in_executor(
            self._engine_thread, self.core.snapshot_world, session
        )
        if data is None:
            return
        sid = session.session_id
        await asyncio.to_thread(self.placement.save_snapshot, sid, data)
        await asyncio.to_thread(self.placement.record_frames, sid, _frames(session))
        lead = session.lead()
        if lead is not None and lead.last_jpeg:
            await asyncio.to_thread(self.placement.save_thumbnail, sid, lead.last_jpeg)

    # --- recordings (inference.serving.recording) ------------------------------------------
    async def _save_recordings(self) -> None:
        """The parts due: at most two per round (like snapshots: one tick is not stalled)."""
        now = time.monotonic()
        due = [s for s in self.sessions.values() if s.recorder and s.recorder.due(now)]
        for session in sorted(due, key=lambda s: s.recorder.last_part)[:2]:
            await self._save_recording(session)

    async def _save_recording(
        self, session: LiveSession, *, final: bool = False, force: bool = False
    ) -> None:
        """Write the session's next recording part (with a checkpoint now and then)."""
        recorder = session.recorder
        now = time.monotonic()
        if recorder is None or recorder.ended or not (final or force or recorder.due(now)):
            return
        loop = asyncio.get_running_loop()
        try:
            if now - recorder.last_checkpoint >= CHECKPOINT_EVERY_S and not final:
                await loop.run_in_executor(
                    self._engine_thread, self.core.record_checkpoint, session, now
                )
            part = self.core.recording_part(session, now, final=final)
            if part is not None:
                await asyncio.to_thread(self.world_store.save, *part)
        except Exception:
            log.exception("worker %s: recording of %s not saved", self.name, session.session_id)

    async def _forked_world(self, session: LiveSession) -> bytes:
        """A fork: the world of a recording at one of its frames, replayed (not drawn) on an
        engine of its own beside this one; the story so far goes on in this session."""
        key, frame, slot = session.fork
        parts = await asyncio.to_thread(self.world_store.load_all, key)
        recording = read_recording(parts)  # RecordingError (a ValueError): a bad world

        def replay():
            return Replay(self.core.engine.replayer(), recording).state_at(frame, slot)

        world, _, session.fork_story = await asyncio.get_running_loop().run_in_executor(
            self._engine_thread, replay
        )
        return world

    async def _end(self, session: LiveSession, *, reason: str) -> None:
        """End one session here: free its slot, forget its snapshot, tell its clients."""
        if self.sessions.get(session.session_id) is not session:
            return
        session.status = SessionStatus.ENDED
        self._ending.add(session.session_id)
        try:
            if reason not in m.WORKER_FAILURES:
                await self._keep_world(session)
            await self._save_recording(session, final=True)
            await self._drop_local(session)
            sid = session.session_id
            await asyncio.to_thread(self.placement.record_frames, sid, _frames(session))
            await asyncio.to_thread(self.placement.release_slot, sid)
            await asyncio.to_thread(self.placement.delete_snapshot, sid)
        finally:
            self._ending.discard(session.session_id)
        await self._status(session.session_id, "ended", reason=reason)
        log.info("worker %s: session %s ended (%s)", self.name, session.session_id, reason)
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self.placement.delete_thumbnail, session.session_id)

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
            if session.fork_story is not None:  # a fork: the story so far, as it was then
                session.narrative = narrative.from_meta(session.fork_story)
                if session.narrative is not None:
                    return
            world = await self._world_change(session, None)
            card = dataclasses.asdict(attach.character) if attach.character else None
            session.narrative = narrative.begin(
                attach.category, world, opening=attach.story_opening, character=card
            )
        except Exception:  # the world still plays without its story
            log.exception("worker %s: no narrative for %s", self.name, session.session_id)

    async def _narrative_live(self, session: LiveSession, camera: Camera | None = None) -> None:
        """On going live (fresh, restored or reconnected): the pair on offer, or a new one; the
        character's greeting once, and to a `camera` seated (again) the talk so far."""
        if session.narrative is None:
            return
        async with self._narrating.setdefault(session.session_id, asyncio.Lock()):
            try:
                state = session.narrative
                if isinstance(state, narrative.Story):
                    if not state.options:
                        await self._offer(session)
                    elif self.sessions.get(session.session_id) is session:
                        await self._choices(session)
                elif isinstance(state, narrative.Character) and not state.greeted:
                    session.narrative, greeting = narrative.character_greet(state)
                    await self._send(session.session_id, m.Line(speaker=state.name, text=greeting))
                    await self._preread(session)
                elif camera is not None:
                    # a reload or a newcomer found an empty chat (the page keeps no talk)
                    await self._replay_talk(session, camera=camera)
            except Exception:
                log.exception("worker %s: narrative of %s failed", self.name, session.session_id)

    # --- replays to a socket that (re)joined: the page keeps no talk and no events ----------
    async def _replay_to_spectator(self, session: LiveSession, channel: str) -> None:
        try:
            await self._replay_talk(session, channel=channel)
            await self._replay_events(session, channel=channel)
        except Exception:  # gone already, or not a channel at all
            log.info("worker %s: no replay to %r", self.name, channel[:80])

    async def _replay_talk(
        self, session: LiveSession, *, camera: Camera | None = None, channel: str = ""
    ) -> None:
        """The talk so far as the character remembers it, to one seated `camera` or to one
        spectator's `channel`, each line marked with its place in it (``history``)."""
        state = session.narrative
        if not isinstance(state, narrative.Character):
            return
        # With one player, every player line was theirs: it shows under their name and colour.
        alone = session.lead() if len(session.cameras) == 1 else None
        for i, (speaker, text) in enumerate(narrative.character_transcript(state)):
            theirs = alone is not None and speaker == narrative.PLAYER_SPEAKER
            line = m.Line(
                alone.name if theirs else speaker,
                text,
                slot=alone.slot if theirs else -1,
                history=i,
            )
            await self._send_replay(session, line, camera, channel)

    async def _replay_events(
        self, session: LiveSession, *, camera: Camera | None = None, channel: str = ""
    ) -> None:
        """The session's last answers to world events, oldest first, as `_replay_talk`."""
        for i, event in enumerate(list(session.recent_events)):
            replayed = dataclasses.replace(event, history=i)
            await self._send_replay(session, replayed, camera, channel)

    async def _send_replay(self, session: LiveSession, message, camera: Camera | None,
                           channel: str) -> None:  # fmt: skip
        """To one seat through the session's group (only its consumer forwards it), or to one
        spectator's channel alone (raises where that channel is no more)."""
        if camera is not None:
            await self._send(
                session.session_id, dataclasses.replace(message, only_slot=camera.slot)
            )
        else:
            await self.layer.send(channel, message.to_message())

    async def _preread(self, session: LiveSession) -> None:
        """While the player reads the greeting (or the reply that folded the memory) and types,
        the model reads the character's card (and the folded memory), so the next reply reads
        only the line. Queued like any job of the session, behind its replies; nobody waits
        for it, and with the queue full it is skipped."""
        world = await self._world_change(session, None)
        # The card shows the world as it is now until the memory folds (``characters.noticed``):
        # the first reply's prompt then begins as this one, whatever changed in between.
        character = session.narrative = characters.noticed(session.narrative, world)
        with contextlib.suppress(QueueFull):
            self._runner.submit(
                session.session_id,
                lambda deadline: self.narrator.preread(character, world, deadline),
                timeout_s=REPLY_TIMEOUT_S,
            )

    async def _story_step(self, session: LiveSession, picked: narrative.Option) -> None:
        """A pick: its event changes the world, a line narrates it, the next pair is offered."""
        async with self._narrating.setdefault(session.session_id, asyncio.Lock()):
            try:
                await self._offer(session, picked)
            except Exception:
                log.exception("worker %s: story step of %s failed", self.name, session.session_id)

    async def _offer(self, session: LiveSession, picked: narrative.Option | None = None) -> None:
        """The next pair; after a pick (`picked`), its event applied first and its line written
        beside the pair (``Narrator.offer``)."""
        world = await self._world_change(session, picked.event_text if picked else None)
        story, seed = session.narrative, session.seed
        answer = await self._generate(
            session,
            lambda deadline: self.narrator.offer(story, world, seed, deadline, picked),
            OFFER_TIMEOUT_S,
        )
        if self.sessions.get(session.session_id) is not session:
            return  # ended or moved while the options were written
        session.narrative = answer.state
        if picked is not None:
            self.core.note(session, "pick", "", picked.label)
        # the story so far, written by the language model (a fork of this moment goes on from it)
        self.core.note(session, "story", answer.state.to_meta())
        await self._save_snapshot(session)  # a pick after a failover finds this pair on offer
        await self._choices(session)

    async def _character_turn(self, session: LiveSession, camera: Camera, line: str | None) -> None:
        """Answer a player's line (None: one screening held back, never shown to the others)."""
        sid = session.session_id
        try:
            async with self._narrating.setdefault(sid, asyncio.Lock()):
                if line is not None:
                    await self._send(sid, m.Line(speaker=camera.name, text=line, slot=camera.slot))
                    self.core.note(session, "say", camera.name, line)
                world = await self._world_change(session, None)
                character, seed = session.narrative, session.seed
                loop = asyncio.get_running_loop()
                partials: asyncio.Queue[str] = asyncio.Queue()

                def on_partial(text: str) -> None:  # called on the runner's thread
                    loop.call_soon_threadsafe(partials.put_nowait, text)

                answer = await self._generate(
                    session,
                    lambda deadline: self.narrator.reply(
                        character,
                        world,
                        line or "",
                        seed,
                        deadline,
                        on_partial,
                        refused=line is None,
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
                self.core.note(session, "say", character.name, answer.reply.text)
                if answer.state.summary != character.summary:
                    # The memory folded: the model reads its new head while the player reads
                    # the reply, not in the next reply's time (~190 tokens, ~0.6 s on a core).
                    await self._preread(session)
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
            for camera in session.cameras.values():
                camera.stepped_keys = None  # a cut: the next frame already shows the change
            self._demand.set()
        return world

    # --- the loops that drive the core -----------------------------------------------------
    async def _pace_loop(self) -> None:
        """Every tick, each live camera shows its next buffered frame."""
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
            await self._save_recordings()

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
            await self._status(session_id, "resuming", worker=target)
            attach = m.Attach(session_id=session_id, restore=True)
            if target == self.name:
                self._dispatch(attach)
            else:
                await self.layer.send(m.worker_channel(target), attach.to_message())

    # --- messages to clients ---------------------------------------------------------------
    async def _send_frames(self, frames: list[tuple[Camera, bytes]]) -> None:
        sent = time.time()
        sends = [
            self.layer.group_send(
                m.camera_group(camera.session_id, camera.slot),
                m.Frame(data=data, sent=sent).to_message(),
            )
            for camera, data in frames
        ]
        for camera, _ in frames:
            session = self.sessions.get(camera.session_id)
            if session is not None and not session.thumbnail_saved and session.lead() is camera:
                # The Live listing shows a session only once its thumbnail exists: save the
                # lead's first frame now, not with the next snapshot seconds later (snapshots
                # keep it fresh from then on).
                session.thumbnail_saved = True
                sid, jpeg = session.session_id, camera.last_jpeg
                sends.append(asyncio.to_thread(self.placement.save_thumbnail, sid, jpeg))
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

    async def _choices(self, session: LiveSession) -> None:
        """The pair on offer with the votes so far, to everyone in the session."""
        story = session.narrative
        if not isinstance(story, narrative.Story):
            return
        ballot = self._ballot(session, story)
        closes_in = None
        if ballot.closes_at is not None:
            closes_in = round(max(0.0, ballot.closes_at - asyncio.get_running_loop().time()), 1)
        choices = m.Choices(
            **narrative.choices_message(story),
            votes=tuple(ballot.counts(ballot.players)),
            audience=tuple(ballot.counts(ballot.audience)),
            closes_in=closes_in,
            picked=session.last_pick,
        )
        await self._send(session.session_id, choices)

    async def _error(self, camera: Camera, code: str, message: str, seq: int = -1) -> None:
        error = m.Error(code=code, message=message, slot=camera.slot, seq=seq)
        await self._send(camera.session_id, error)

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
            "players": core.cameras() if core else 0,
            "fps": round(self.achieved_fps, 2),
            "chunk_cap": core.controller.cap if core else 1,
            "frames_sent": core.frames_sent if core else 0,
            "frames_discarded": sum(
                c.frames_discarded for s in self.sessions.values() for c in s.cameras.values()
            ),
            "terrain_late_chunks": self.engine.late_chunks if self.engine else 0,
            "terrain_ahead_chunks": self.engine.ahead_chunks if self.engine else 0,
            "terrain_held_frames": self.engine.held_frames if self.engine else 0,
            "terrain_moved_frames": self.engine.moved_frames if self.engine else 0,
            "narrative_waiting": self._runner.waiting(),
            "narrative_backends": self.narrator.backends,
        }


def _frames(session: LiveSession) -> int:
    """Frames the session's players have been shown so far, all cameras together."""
    return sum(c.frame_no for c in session.cameras.values())
