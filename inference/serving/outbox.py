"""What a worker sends to its clients: each seated player's frames to their camera's group,
everything else to the session's group, and the replays a socket that (re)joined needs (the
page keeps no talk and no events). A failed send is logged, never raised into the loops."""

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable

from inference.narrative.character import PLAYER_SPEAKER, Character, character_transcript
from inference.serving import messages as m
from inference.serving import votes
from inference.serving.placement import Placement
from inference.serving.session import Camera, LiveSession, SessionStatus

log = logging.getLogger(__name__)


class Outbox:
    def __init__(
        self,
        layer,
        *,
        name: str,
        sessions: dict[str, LiveSession],
        placement: Placement,
        fps_of: Callable[[str], float],
    ) -> None:
        """``sessions``: the worker's own dict (read only); ``fps_of(session_id)``: the frame
        rate the session achieves now."""
        self.layer = layer
        self.name = name
        self.sessions = sessions
        self.placement = placement
        self.fps_of = fps_of

    async def send(self, session_id: str, message: m.Message) -> None:
        """Send to a session's group."""
        try:
            await self.layer.group_send(m.session_group(session_id), message.to_message())
        except Exception:
            log.exception("worker %s: %s to %s failed", self.name, message.TYPE, session_id)

    async def status(
        self, session_id: str, state: str, *, reason: str | None = None, worker: str | None = None
    ) -> None:
        fps = round(self.fps_of(session_id), 1)
        held = self.sessions.get(session_id)
        narrator = held.narrator if held is not None and held.narrator else None
        status = m.Status(
            state=state, fps=fps, reason=reason, worker=worker or self.name, narrator=narrator
        )
        await self.send(session_id, status)

    async def fps_to_live(self) -> None:
        """Every live session hears the frame rate it achieves."""
        for session in list(self.sessions.values()):
            if session.status is SessionStatus.LIVE:
                await self.status(session.session_id, "live")

    async def choices(self, session: LiveSession) -> None:
        """The pair on offer with the votes so far, to everyone in the session."""
        choices = votes.choices(session, asyncio.get_running_loop().time())
        if choices is not None:
            await self.send(session.session_id, choices)

    async def error(self, camera: Camera, code: str, message: str, seq: int = -1) -> None:
        """To the sender alone (its consumer forwards an error only to its slot)."""
        error = m.Error(code=code, message=message, slot=camera.slot, seq=seq)
        await self.send(camera.session_id, error)

    async def frames(self, frames: list[tuple[Camera, bytes]]) -> None:
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

    async def replay_to_spectator(self, session: LiveSession, channel: str) -> None:
        """The talk so far and the last answers to world events, to one spectator's channel."""
        try:
            await self.replay_talk(session, channel=channel)
            await self.replay_events(session, channel=channel)
        except Exception:  # gone already, or not a channel at all
            log.info("worker %s: no replay to %r", self.name, channel[:80])

    async def replay_talk(
        self, session: LiveSession, *, camera: Camera | None = None, channel: str = ""
    ) -> None:
        """The talk so far as the character remembers it, to one seated `camera` or to one
        spectator's `channel`, each line marked with its place in it (``history``)."""
        state = session.narrative
        if not isinstance(state, Character):
            return
        # With one player, every player line was theirs: it shows under their name and colour.
        alone = session.lead() if len(session.cameras) == 1 else None
        for i, (speaker, text) in enumerate(character_transcript(state)):
            theirs = alone is not None and speaker == PLAYER_SPEAKER
            line = m.Line(
                alone.name if theirs else speaker,
                text,
                slot=alone.slot if theirs else -1,
                history=i,
            )
            await self._replay(session, line, camera, channel)

    async def replay_events(
        self, session: LiveSession, *, camera: Camera | None = None, channel: str = ""
    ) -> None:
        """The session's last answers to world events, oldest first, each marked with its place
        among them (``history``), as ``replay_talk``."""
        for i, event in enumerate(list(session.recent_events)):
            replayed = dataclasses.replace(event, history=i)
            await self._replay(session, replayed, camera, channel)

    async def _replay(self, session: LiveSession, message, camera: Camera | None,
                      channel: str) -> None:  # fmt: skip
        """To one seat through the session's group (only its consumer forwards it), or to one
        spectator's channel alone (raises where that channel is no more)."""
        if camera is not None:
            await self.send(session.session_id, dataclasses.replace(message, only_slot=camera.slot))
        else:
            await self.layer.send(channel, message.to_message())
