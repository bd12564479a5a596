"""What the player's and the spectators' sockets share (consumers.py holds both): authorise,
join the session's group and one camera's, validate each client message (`sessions.protocol`)
and forward the worker's typed messages (`inference.serving.messages`) to the browser.
"""

import json
import logging
import time

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.core.cache import cache

from inference.serving import messages as m
from inference.serving.messages import camera_group, session_group
from sessions import seats, selectors, worker_client
from sessions.frame_lag import FrameLag
from sessions.models import PlaySession, SessionStatus
from sessions.protocol import (
    CLOSE_FLOODING,
    MessageRateLimiter,
    ProtocolError,
    parse_client_message,
)

log = logging.getLogger(__name__)

CHOICES_KEEP_S = 600  # the pair on offer, kept for late spectators


class SessionConsumer(AsyncWebsocketConsumer):
    """What the player's and the spectators' sockets share: authorise, join, forward."""

    session: PlaySession | None = None
    slot: int | None = None  # the seat whose camera this socket shows (a spectator: the lead's)

    async def connect(self) -> None:
        self.session_id = self.scope["url_route"]["kwargs"]["session_id"]
        self.limiter = MessageRateLimiter()
        self.frame_lag = FrameLag()
        self.state = ""
        self.fps = 0.0
        self.viewers = 0
        self.narrator: str | None = None  # which backend wrote the last story step or reply
        self.closing = False
        self.players: tuple[m.SeatInfo, ...] = ()
        self.voted: dict[str, int] = {}  # choice id -> this socket's vote
        session, close_code = await self._authorise()
        if close_code is not None:
            # Accept first so the browser sees why (a 4xxx code) and does not retry.
            await self.accept()
            await self.close(code=close_code)
            return
        self.session = session
        self.players = await database_sync_to_async(seats.presence)(session)
        await self.channel_layer.group_add(session_group(self.session_id), self.channel_name)
        await self._watch_camera(self._camera_slot())
        await self.accept()
        await self.joined()

    async def disconnect(self, code) -> None:
        if self.session is None:
            return
        await self.channel_layer.group_discard(session_group(self.session_id), self.channel_name)
        await self._watch_camera(None)
        await self.left()

    def _camera_slot(self) -> int | None:
        """Whose frames this socket gets (players: their own; spectators: the lead's)."""
        return min((p.slot for p in self.players), default=None)

    async def _watch_camera(self, slot: int | None) -> None:
        if slot == self.slot:
            return
        if self.slot is not None:
            await self.channel_layer.group_discard(
                camera_group(self.session_id, self.slot), self.channel_name
            )
        self.slot = slot
        if slot is not None:
            await self.channel_layer.group_add(
                camera_group(self.session_id, slot), self.channel_name
            )

    def _players(self) -> list[dict]:
        mine = self._seat_slot()
        return [
            {
                "slot": p.slot,
                "name": p.name,
                "color": p.color,
                "state": p.state,
                "you": p.slot == mine,
            }
            for p in self.players
        ]

    def _seat_slot(self) -> int | None:
        return None  # spectators sit nowhere

    async def _placed_worker(self) -> str | None:
        """The worker holding this session now (None while it waits for one)."""
        placement = worker_client.get_placement()
        return await sync_to_async(placement.worker_of, thread_sensitive=False)(
            str(self.session_id)
        )

    def _for_another_seat(self, only_slot: int) -> bool:
        """A replay meant for one seat (``only_slot``; -1: everyone) that is not this socket's."""
        return only_slot >= 0 and only_slot != self._seat_slot()

    def _is_lead(self) -> bool:
        """The lowest seated slot's own socket."""
        slot = self._seat_slot()
        return slot is not None and slot == min((p.slot for p in self.players), default=None)

    async def receive(self, text_data=None, bytes_data=None) -> None:
        if self.closing:
            return  # closed for abuse: what is still in flight is dropped unread
        try:
            self.limiter.check()
            message = parse_client_message(text_data, bytes_data)
            await self.handle(message)
        except ProtocolError as exc:
            await self.send_json(exc.as_message())
            if exc.abuse:
                self.closing = True
                await self.close(code=CLOSE_FLOODING)
        except Exception:
            # A message no rule foresaw must not kill the socket's task: that skips disconnect(),
            # so the seat stays held (keys still pressed) and the viewer count never goes down.
            log.exception("session %s: message failed", self.session_id)
            internal = ProtocolError("internal", "That message could not be handled.")
            await self.send_json(internal.as_message())

    async def send_json(self, message: dict) -> None:
        await self.send(text_data=json.dumps(message))

    async def send_status(self, *, reason: str | None = None, position: int | None = None) -> None:
        message = {
            "type": "status",
            "state": self.state,
            "fps": self.fps,
            "viewers": self.viewers,
            "players": self._players(),
        }
        if self._seat_slot() is not None:
            message["you"] = self._seat_slot()
        if self.narrator:
            message["narrator"] = self.narrator
        if position is not None:
            message["position"] = position
        if reason:
            message["reason"] = reason
        await self.send_json(message)

    # --- group events (dotted types: "session.frame" -> session_frame) ------------------------

    async def session_frame(self, event) -> None:
        frame = m.Frame.from_message(event)
        if self.frame_lag.fresh(frame.sent, time.time()):
            await self.send(bytes_data=frame.data)

    async def session_status(self, event) -> None:
        if self.state == SessionStatus.ENDED:
            return  # the service and the worker may both announce the end
        status = m.Status.from_message(event)
        self.state = status.state or self.state
        self.fps = status.fps
        self.narrator = status.narrator or self.narrator
        await self.send_status(reason=status.reason)
        if self.state == SessionStatus.ENDED:
            await self.close(code=1000)

    async def session_event(self, event) -> None:
        result = m.Event.from_message(event)
        if self._for_another_seat(result.only_slot):
            return  # the last answers, replayed to a player who (re)joined
        message = {
            "type": "event",
            "seq": result.seq,
            "status": result.status,
            "reason": result.reason,
            "by": result.by,
            "slot": result.slot,
            "text": result.text,
            "you": result.slot == self._seat_slot(),
        }
        if result.suggest:
            message["suggest"] = list(result.suggest)
        if result.history >= 0:
            message["history"] = result.history
        await self.send_json(message)

    async def session_choices(self, event) -> None:
        choices = m.Choices.from_message(event)
        if self._is_lead():
            # One socket per session keeps the pair on offer for spectators who come later.
            await sync_to_async(cache.set)(choices_key(self.session_id), event, CHOICES_KEEP_S)
        await self.send_json(
            {
                "type": "choices",
                "choice_id": choices.choice_id,
                "options": list(choices.options),
                "story": list(choices.story),
                "chosen": list(choices.chosen),
                "votes": list(choices.votes),
                "audience": list(choices.audience),
                "closes_in": choices.closes_in,
                "voted": self.voted.get(choices.choice_id),
                "picked": choices.picked,
            }
        )

    async def session_say(self, event) -> None:
        # Generated lines were screened on the worker before they were sent (and a partial
        # only ever as a whole prefix): see worker_client.screen_generated_line.
        line = m.Line.from_message(event)
        if self._for_another_seat(line.only_slot):
            return  # the talk so far, replayed to a player who (re)joined
        message = {"type": "say", "speaker": line.speaker, "text": line.text}
        if line.history >= 0:
            message["history"] = line.history
        if line.slot >= 0:
            message["slot"] = line.slot
            message["you"] = line.slot == self._seat_slot()
        if line.partial:
            message["partial"] = True
        await self.send_json(message)

    async def session_presence(self, event) -> None:
        self.players = m.Presence.from_message(event).players
        await self._watch_camera(self._camera_slot())
        await self.send_json({"type": "presence", "players": self._players()})

    async def session_removed(self, event) -> None:
        pass  # only the removed player's own socket cares

    async def session_error(self, event) -> None:
        pass  # the worker's answer to the player's own pick or line

    async def session_placed(self, event) -> None:
        self.state = SessionStatus.STARTING
        await self.send_status()

    async def session_player(self, event) -> None:
        pass  # spectators do not care which socket the player uses

    async def session_viewers(self, event) -> None:
        self.viewers = m.Viewers.from_message(event).viewers
        await self.send_status()

    # --- hooks -----------------------------------------------------------------------------

    async def _authorise(self) -> tuple[PlaySession | None, int | None]:
        raise NotImplementedError

    async def joined(self) -> None: ...

    async def left(self) -> None: ...

    async def handle(self, message) -> None:
        raise NotImplementedError

    async def _read_viewers(self) -> int:
        return int(await sync_to_async(cache.get)(selectors.viewers_key(self.session_id), 0) or 0)


def choices_key(session_id) -> str:
    """Cache key of the pair on offer now, kept for spectators who come later."""
    return f"play:choices:{session_id}"
