"""What outlives a session on one worker: its snapshots, frame count and thumbnail in placement
(another worker resumes from them), and in the world store a Live world kept between sessions,
the session's recording, and the recordings a fork starts from. The engine's share of each
(snapshot, keep, checkpoint, replay) runs on the engine thread."""

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from inference.serving.core import EngineCore
from inference.serving.placement import Placement
from inference.serving.recording import CHECKPOINT_EVERY_S, Replay, read_recording
from inference.serving.session import LiveSession

log = logging.getLogger(__name__)

RECORDING_PARTS_PER_ROUND = 2  # like snapshots: one round of the producer is not stalled


class WorldStore(Protocol):
    """The media store (the web side passes S3 or local media): where Live worlds are kept
    between sessions, and where recordings are written."""

    def load(self, key: str) -> bytes | None: ...
    def save(self, key: str, data: bytes) -> None: ...
    def load_all(self, prefix: str) -> list[bytes]: ...  # every file under it, by name


def frames_shown(session: LiveSession) -> int:
    """Frames the session's players have been shown so far, all cameras together."""
    return sum(c.frame_no for c in session.cameras.values())


class SessionStorage:
    def __init__(
        self,
        *,
        name: str,
        placement: Placement,
        world_store: WorldStore | None,
        engine_thread: ThreadPoolExecutor,
    ) -> None:
        self.name = name
        self.placement = placement
        self.world_store = world_store
        self.engine_thread = engine_thread

    async def _on_engine(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.engine_thread, fn, *args)

    async def save_snapshot(self, core: EngineCore, session: LiveSession) -> None:
        if not session.world_id:
            return
        session.last_snapshot = time.monotonic()
        data = await self._on_engine(core.snapshot_world, session)
        if data is None:
            return
        sid = session.session_id
        await asyncio.to_thread(self.placement.save_snapshot, sid, data)
        await asyncio.to_thread(self.placement.record_frames, sid, frames_shown(session))
        lead = session.lead()
        if lead is not None and lead.last_jpeg:
            await asyncio.to_thread(self.placement.save_thumbnail, sid, lead.last_jpeg)

    async def release(self, session: LiveSession) -> None:
        """A session ended here: its frame count stays, its slot and snapshot go."""
        sid = session.session_id
        await asyncio.to_thread(self.placement.record_frames, sid, frames_shown(session))
        await asyncio.to_thread(self.placement.release_slot, sid)
        await asyncio.to_thread(self.placement.delete_snapshot, sid)

    async def load_kept(self, session: LiveSession) -> bytes | None:
        """A Live world's state from its last session (None: a fresh world)."""
        if not session.persist_key or self.world_store is None:
            return None
        try:
            return await asyncio.to_thread(self.world_store.load, session.persist_key)
        except Exception:
            log.exception("worker %s: could not load kept world %s", self.name, session.persist_key)
            return None

    async def keep_world(self, core: EngineCore, session: LiveSession) -> None:
        """At the end of a Live world's session: keep the world for the next visitor."""
        if not session.persist_key or self.world_store is None or not session.world_id:
            return
        try:
            data = await self._on_engine(core.keep_world, session)
            if data:
                await asyncio.to_thread(self.world_store.save, session.persist_key, data)
        except Exception:
            log.exception("worker %s: could not keep world %s", self.name, session.persist_key)

    async def save_recordings(self, core: EngineCore, sessions: list[LiveSession]) -> None:
        """The recording parts due, the oldest first, a few per round."""
        now = time.monotonic()
        due = [s for s in sessions if s.recorder and s.recorder.due(now)]
        for session in sorted(due, key=lambda s: s.recorder.last_part)[:RECORDING_PARTS_PER_ROUND]:
            await self.save_recording(core, session)

    async def save_recording(
        self, core: EngineCore, session: LiveSession, *, final: bool = False, force: bool = False
    ) -> None:
        """Write the session's next recording part (with a checkpoint now and then)."""
        recorder = session.recorder
        now = time.monotonic()
        if recorder is None or recorder.ended or not (final or force or recorder.due(now)):
            return
        try:
            if now - recorder.last_checkpoint >= CHECKPOINT_EVERY_S and not final:
                await self._on_engine(core.record_checkpoint, session, now)
            part = core.recording_part(session, now, final=final)
            if part is not None:
                await asyncio.to_thread(self.world_store.save, *part)
        except Exception:
            log.exception("worker %s: recording of %s not saved", self.name, session.session_id)

    async def forked_world(self, core: EngineCore, session: LiveSession) -> bytes:
        """A fork: the world of a recording at one of its frames, replayed (not drawn) on an
        engine of its own beside this one; the story so far goes on in this session."""
        key, frame, slot = session.fork
        parts = await asyncio.to_thread(self.world_store.load_all, key)
        recording = read_recording(parts)  # RecordingError (a ValueError): a bad world

        def replay() -> tuple:
            return Replay(core.engine.replayer(), recording).state_at(frame, slot)

        world, _, session.fork_story = await self._on_engine(replay)
        return world
