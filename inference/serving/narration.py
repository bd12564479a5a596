"""Story steps and dialogue in a worker's sessions (``inference.narrative.narrator``: a language
model, the grammar as its fallback).

Generation runs on the narrative runner's threads (bounded queue, a deadline per request,
sessions in turn), off the event loop and the engine thread, and a reply streams to the chat
as partial lines. One narrative step at a time per session. What it needs of the worker (its
sessions, sends, the world's description, snapshots) comes through ``NarrationHost``.
"""

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Protocol

from inference.narrative import character_replies
from inference.narrative.character import Character, character_greet
from inference.narrative.narrator import Answer, Narrator
from inference.narrative.runner import GenerationRunner, QueueFull
from inference.narrative.state import begin, from_meta
from inference.narrative.story import Option, Story
from inference.serving import messages as m
from inference.serving.core import EngineCore
from inference.serving.outbox import Outbox
from inference.serving.session import Camera, LiveSession, Refusal, SessionStatus

log = logging.getLogger(__name__)

MAX_SAYS_QUEUED = 3  # player lines waiting for the character's answer; more get an error
# Deadlines per generation request (queue wait included): past them the grammar answers.
OFFER_TIMEOUT_S = 6.0
REPLY_TIMEOUT_S = 5.0


class NarrationHost(Protocol):
    """The worker, as narration sees it."""

    sessions: dict[str, LiveSession]
    core: EngineCore | None
    outbox: Outbox

    async def world_change(self, session: LiveSession, event_text: str | None) -> dict: ...
    async def save_snapshot(self, session: LiveSession) -> None: ...


class Narration:
    def __init__(
        self,
        host: NarrationHost,
        narrator: Narrator,
        *,
        name: str,
        capacity: int,
        screen: Callable[[str], bool] | None = None,
    ) -> None:
        """``screen(text) -> bool``: may a generated line be shown (None: the narrator's own)."""
        self.host = host
        self.name = name
        self.narrator = narrator
        if screen is not None:
            narrator.screen = screen
        self.runner = GenerationRunner(
            name=f"narrative-{name}", per_session=4, max_jobs=max(16, 4 * capacity),
            concurrency=narrator.concurrency,  # NARRATIVE_LM_CONCURRENCY (one per session)
        )  # fmt: skip
        self._locks: dict[str, asyncio.Lock] = {}  # one narrative step at a time per session
        self._says_waiting: dict[str, int] = {}

    def _lock(self, session_id: str) -> asyncio.Lock:
        return self._locks.setdefault(session_id, asyncio.Lock())

    def _held(self, session: LiveSession) -> bool:
        return self.host.sessions.get(session.session_id) is session

    def drop(self, session_id: str) -> None:
        """Forget a session that left this worker (its queued jobs too)."""
        self._locks.pop(session_id, None)
        self._says_waiting.pop(session_id, None)
        self.runner.drop(session_id)

    def close(self) -> None:
        self.runner.close()

    def stats(self) -> dict:
        return {
            "narrative_waiting": self.runner.waiting(),
            "narrative_backends": self.narrator.backends,
        }

    async def begin(self, session: LiveSession, attach: m.Attach) -> None:
        """A new session's story or character (the world plays on without one if this fails)."""
        if attach.category not in ("stories", "characters"):
            return
        try:
            if session.fork_story is not None:  # a fork: the story so far, as it was then
                session.narrative = from_meta(session.fork_story)
                if session.narrative is not None:
                    return
            world = await self.host.world_change(session, None)
            card = dataclasses.asdict(attach.character) if attach.character else None
            session.narrative = begin(
                attach.category, world, opening=attach.story_opening, character=card
            )
        except Exception:
            log.exception("worker %s: no narrative for %s", self.name, session.session_id)

    async def live(self, session: LiveSession, camera: Camera | None = None) -> None:
        """On going live (fresh, restored or reconnected): the pair on offer, or a new one; the
        character's greeting once, and to a `camera` seated (again) the talk so far."""
        if session.narrative is None:
            return
        sid = session.session_id
        async with self._lock(sid):
            try:
                state = session.narrative
                if isinstance(state, Story):
                    if not state.options:
                        await self._offer(session)
                    elif self._held(session):
                        await self.host.outbox.choices(session)
                elif isinstance(state, Character) and not state.greeted:
                    session.narrative, greeting = character_greet(state)
                    await self.host.outbox.send(sid, m.Line(speaker=state.name, text=greeting))
                    await self._preread(session)
                elif camera is not None:
                    # a reload or a newcomer found an empty chat (the page keeps no talk)
                    await self.host.outbox.replay_talk(session, camera=camera)
            except Exception:
                log.exception("worker %s: narrative of %s failed", self.name, sid)

    def admit_say(self, session: LiveSession, message: m.Say) -> Refusal | None:
        """Queue a player's line for the character (None), or say why not."""
        sid = session.session_id
        if not isinstance(session.narrative, Character):
            return Refusal("unsupported", "No one here to talk to.")
        text = message.text
        if not message.refused and (
            text is None or not text.strip() or len(text) > m.MAX_SAY_CHARS
        ):
            return Refusal("bad_text", "Say something (500 characters at most).")
        if self._says_waiting.get(sid, 0) >= MAX_SAYS_QUEUED * max(1, len(session.cameras)):
            return Refusal("too_many_messages", "Wait for an answer first.")
        self._says_waiting[sid] = self._says_waiting.get(sid, 0) + 1
        return None

    async def story_step(self, session: LiveSession, picked: Option) -> None:
        """A pick: its event changes the world, a line narrates it, the next pair is offered."""
        async with self._lock(session.session_id):
            try:
                await self._offer(session, picked)
            except Exception:
                log.exception("worker %s: story step of %s failed", self.name, session.session_id)

    async def _offer(self, session: LiveSession, picked: Option | None = None) -> None:
        """The next pair; after a pick (`picked`), its event applied first and its line written
        beside the pair (``Narrator.offer``)."""
        world = await self.host.world_change(session, picked.event_text if picked else None)
        story, seed = session.narrative, session.seed
        answer = await self._generate(
            session,
            lambda deadline: self.narrator.offer(story, world, seed, deadline, picked),
            OFFER_TIMEOUT_S,
        )
        if not self._held(session):
            return  # ended or moved while the options were written
        session.narrative = answer.state
        core = self.host.core
        if picked is not None:
            core.note(session, "pick", "", picked.label)
        # the story so far, written by the language model (a fork of this moment goes on from it)
        core.note(session, "story", answer.state.to_meta())
        await self.host.save_snapshot(session)  # a pick after a failover finds this pair on offer
        await self.host.outbox.choices(session)

    async def character_turn(self, session: LiveSession, camera: Camera, line: str | None) -> None:
        """Answer a player's line (None: one screening held back, never shown to the others).
        Its place was taken by ``admit_say``."""
        sid, host = session.session_id, self.host
        try:
            async with self._lock(sid):
                if line is not None:
                    await host.outbox.send(
                        sid, m.Line(speaker=camera.name, text=line, slot=camera.slot)
                    )
                    host.core.note(session, "say", camera.name, line)
                world = await host.world_change(session, None)
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
                if not self._held(session):
                    return
                session.narrative = answer.state
                if answer.reply.event_text:
                    await host.world_change(session, answer.reply.event_text)
                await host.outbox.send(sid, m.Line(speaker=character.name, text=answer.reply.text))
                host.core.note(session, "say", character.name, answer.reply.text)
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
                self.runner.submit(session.session_id, job, timeout_s=timeout_s)
            )
        except QueueFull:
            # Every place taken: the grammar answers at once (its deadline has passed).
            future = asyncio.ensure_future(asyncio.to_thread(job, time.monotonic()))
        while partials is not None and not future.done():
            getter = asyncio.ensure_future(partials.get())
            done, _ = await asyncio.wait({future, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                line = m.Line(speaker=speaker, text=getter.result(), partial=True)
                await self.host.outbox.send(session.session_id, line)
            else:
                getter.cancel()  # the final line follows; later partials are dropped
        answer = await future
        if answer.backend != session.narrator:
            session.narrator = answer.backend
            if session.status is SessionStatus.LIVE:
                await self.host.outbox.status(session.session_id, "live")
        return answer

    async def _preread(self, session: LiveSession) -> None:
        """While the player reads the greeting (or the reply that folded the memory) and types,
        the model reads the character's card (and the folded memory), so the next reply reads
        only the line. Queued like any job of the session, behind its replies; nobody waits
        for it, and with the queue full it is skipped."""
        world = await self.host.world_change(session, None)
        # The card shows the world as it is now until the memory folds
        # (``character_replies.noticed``): the first reply's prompt then begins as this one,
        # whatever changed in between.
        character = session.narrative = character_replies.noticed(session.narrative, world)
        with contextlib.suppress(QueueFull):
            self.runner.submit(
                session.session_id,
                lambda deadline: self.narrator.preread(character, world, deadline),
                timeout_s=REPLY_TIMEOUT_S,
            )
