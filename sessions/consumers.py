"""WebSocket consumers speaking protocol v1 (DESIGN.md): `ws/play/<id>/` and `ws/watch/<id>/`.

Both (on `sessions.session_consumer.SessionConsumer`) join the session's group and forward
what its worker sends there (status, events, choices, lines: the typed messages of
`inference.serving.messages`), and one camera's frames: a seated player's socket its own
camera's group, a spectator's the lowest seated slot's (it follows the presence list). Players'
sockets talk to the worker, through `sessions.worker_client`, each for its own seat; spectators
only vote. Every client message is validated in `sessions.protocol` first, so nothing malformed
ever reaches a worker or another session.
"""

import asyncio
import logging
import time
from dataclasses import replace
from datetime import UTC, datetime

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from django.core.cache import cache

from inference.serving import messages as m
from inference.serving.messages import session_group
from sessions import embedded, grace, seats, selectors, services, worker_client
from sessions.client_ip import scope_client_ip
from sessions.models import PlaySession, Seat, SessionStatus
from sessions.protocol import (
    CLOSE_ENDED,
    CLOSE_FORBIDDEN,
    CLOSE_NOT_FOUND,
    CLOSE_REMOVED,
    CLOSE_REPLACED,
    Choose,
    Input,
    Ping,
    Prompt,
    ProtocolError,
    Say,
    Vote,
)
from sessions.session_consumer import SessionConsumer, choices_key
from worlds.models import Category
from worlds.moderation import policy

log = logging.getLogger(__name__)

QUEUE_POLL_S = 1.0
WATCHDOG_S = 5.0
# Written to the database at most this often per session (inputs can arrive 60 times a second).
INPUT_TOUCH_S = 15.0


class PlayConsumer(SessionConsumer):
    """A seated player's socket: their inputs, prompts, votes and lines go to the session's
    worker, for their seat; they get their own camera's frames."""

    seat: Seat | None = None

    async def connect(self) -> None:
        self.worker: str | None = None
        self.held: dict | None = None  # the latest input message, re-sent after an attach
        self.tasks: list[asyncio.Task] = []
        self.last_input = time.time()
        self.last_touch = 0.0
        await super().connect()

    @database_sync_to_async
    def _authorise(self):
        user = self.scope.get("user")
        session_store = self.scope.get("session")
        key = session_store.session_key if session_store is not None else None
        try:
            session = selectors.session_get(session_id=self.session_id)
        except PlaySession.DoesNotExist:
            return None, CLOSE_NOT_FOUND
        if not session.is_active:
            return None, CLOSE_ENDED
        self.seat = seats.seat_of(session=session, user=user, session_key=key)
        if self.seat is None:
            return None, CLOSE_FORBIDDEN
        return session, None

    def _seat_slot(self) -> int | None:
        return self.seat.slot if self.seat is not None else None

    def _camera_slot(self) -> int | None:
        return self._seat_slot()

    async def joined(self) -> None:
        await embedded.ensure_started()
        # Our own seat is connected from now on: the first status must not say "joining".
        self.players = await database_sync_to_async(seats.seat_attached)(
            seat=self.seat, channel=self.channel_name
        )
        # One socket per seat: an older tab of this player (or a half-dead socket) steps aside.
        player = m.Player(channel=self.channel_name, slot=self.seat.slot)
        await self.channel_layer.group_send(session_group(self.session_id), player.to_message())
        self.viewers = await self._read_viewers()
        self.state = self.session.status
        if self.state == SessionStatus.QUEUED:
            await self._wait_in_queue_once()
            if self.state == SessionStatus.QUEUED:
                self.tasks.append(asyncio.create_task(self._wait_in_queue()))
        else:
            await self._attach()
        self.tasks.append(asyncio.create_task(self._watchdog()))

    async def left(self) -> None:
        for task in self.tasks:
            task.cancel()
        session = await self._refresh()
        if session is None or not session.is_active:
            return
        detached = await database_sync_to_async(seats.seat_detached)(
            seat=self.seat, channel=self.channel_name
        )
        if detached:
            grace.start(self.seat.pk)

    async def handle(self, message) -> None:
        if isinstance(message, Ping):
            await self.send_json({"type": "pong", "t": message.t})
        elif isinstance(message, Input):
            await self._input(message)
        elif isinstance(message, Prompt):
            await self._prompt(message)
        elif isinstance(message, Choose):
            await self._choose(message)
        elif isinstance(message, Say):
            await self._say(message)
        elif isinstance(message, Vote):
            raise ProtocolError("unsupported", "Players vote with choose; vote is the audience's.")

    async def _input(self, message: Input):
        self.last_input = time.time()
        self.held = m.Input(
            session_id=str(self.session_id),
            seq=message.seq,
            keys=tuple(sorted(message.keys)),
            slot=self.seat.slot,
        )
        await self._to_worker(self.held)
        if self.last_input - self.last_touch >= INPUT_TOUCH_S:
            self.last_touch = self.last_input
            at = datetime.fromtimestamp(self.last_input, tz=UTC)
            await database_sync_to_async(services.session_touch_input)(
                session_id=self.session_id, at=at, slot=self.seat.slot
            )

    async def _prompt(self, message: Prompt):
        self.last_input = time.time()
        if not self.worker:
            raise ProtocolError("not_running", "The world is not running yet.", seq=message.seq)
        refusal = await self._screen(message.text, "event")
        if refusal is not None:
            await self._reject(message.seq, refusal)
            return
        prompt = m.Prompt(
            session_id=str(self.session_id), seq=message.seq, text=message.text, slot=self.seat.slot
        )
        await self._to_worker(prompt)

    async def _choose(self, message: Choose):
        self._narrative_ready(Category.STORIES, "This world takes no story picks.")
        self.voted[message.choice_id] = message.option
        await self._to_worker(
            m.Choose(
                session_id=str(self.session_id),
                choice_id=message.choice_id,
                option=message.option,
                slot=self.seat.slot,
            )
        )

    async def _say(self, message: Say):
        self._narrative_ready(Category.CHARACTERS, "There is no one to talk to in this world.")
        # Dialogue is user text in the world, like a prompt: screened and recorded the same way.
        refusal = await self._screen(message.text, "say")
        say = m.Say(session_id=str(self.session_id), text=message.text, slot=self.seat.slot)
        if refusal is not None:
            # The player learns why; the character still answers, refusing in its own voice
            # (its words never leave this process, nor reach the other players).
            await self._to_worker(replace(say, text=None, refused=True))
            raise ProtocolError("blocked", refusal)
        await self._to_worker(say)

    async def _screen(self, text: str, field: str) -> str | None:
        """None when the text may reach the world, else the reason the player sees; either way
        moderators' live page shows it."""
        refusal = await sync_to_async(policy.screen_play_text, thread_sensitive=False)(
            text, field=field
        )
        await sync_to_async(policy.prompt_record)(
            session_id=self.session_id, text=text, status="rejected" if refusal else "sent"
        )
        return refusal

    def _narrative_ready(self, category: str, unsupported: str) -> None:
        self.last_input = time.time()
        if self.session.world_version.category != category:
            raise ProtocolError("unsupported", unsupported)
        if not self.worker:
            raise ProtocolError("not_running", "The world is not running yet.")

    async def _reject(self, seq: int, reason: str):
        # Only the sender hears it: a refused event never reaches the world or the others.
        await self.send_json(
            {"type": "event", "seq": seq, "status": "rejected", "reason": reason, "you": True}
        )

    async def _to_worker(self, message: m.Message):
        # Queued sessions have no worker yet: their inputs have nowhere to go, and need none.
        if self.worker:
            await worker_client.send(self.worker, message)

    async def _attach(self):
        """Send the session to its worker (again, after a reconnect: the worker still holds
        its state, or restores it from the snapshot if the session moved)."""
        worker, restore = await database_sync_to_async(services.session_ensure_placed)(
            session=self.session
        )
        if worker is None:
            session = await self._refresh()
            if session is not None and session.status == SessionStatus.QUEUED:
                self.state = SessionStatus.QUEUED
                await self.send_status(position=await self._position())
                self.tasks.append(asyncio.create_task(self._wait_in_queue()))
            else:
                # A dead worker's session: a live one claims it and announces "resuming".
                self.state = SessionStatus.RESUMING
                await self.send_status()
            return
        self.worker = worker
        attach = worker_client.attach_message(self.session, restore=restore, seat=self.seat)
        await self._to_worker(attach)
        if self.held is not None:
            # Keys pressed while it waited: the world starts with them held.
            await self._to_worker(self.held)
        if self.state in ("", SessionStatus.QUEUED):
            self.state = SessionStatus.STARTING
        await self.send_status()

    async def _position(self) -> int | None:
        return await sync_to_async(
            worker_client.get_placement().queue_position, thread_sensitive=False
        )(str(self.session_id))

    async def _wait_in_queue_once(self):
        await database_sync_to_async(services.queue_promote)()
        session = await self._refresh()
        if session is None or not session.is_active:
            return
        if session.status == SessionStatus.QUEUED:
            await self.send_status(position=await self._position())
            return
        self.session = session
        self.state = session.status
        await self._attach()

    async def _wait_in_queue(self):
        last_position = None
        while self.state == SessionStatus.QUEUED:
            await asyncio.sleep(QUEUE_POLL_S)
            await database_sync_to_async(services.queue_promote)()
            session = await self._refresh()
            if session is None or not session.is_active:
                return
            if session.status != SessionStatus.QUEUED:
                self.session = session
                self.state = session.status
                await self._attach()
                return
            position = await self._position()
            if position != last_position:
                last_position = position
                await self.send_status(position=position)

    async def _watchdog(self):
        """Idle timeout and maximum length, checked where the inputs arrive: this player
        leaves their seat (the session ends with its last one)."""
        while True:
            await asyncio.sleep(WATCHDOG_S)
            seat = await database_sync_to_async(
                Seat.objects.select_related("session").filter(pk=self.seat.pk, left_at=None).first
            )()
            if seat is None or not seat.session.is_active:
                return
            now = datetime.now(tz=UTC)
            last_input = datetime.fromtimestamp(self.last_input, tz=UTC)
            reason = services.seat_expiry_reason(seat=seat, now=now, last_input=last_input)
            if reason is not None:
                session = await database_sync_to_async(seats.seat_leave)(seat=seat, reason=reason)
                if session.is_active:  # the others play on; this socket is done
                    self.state = SessionStatus.ENDED
                    await self.send_status(reason=reason)
                    await self.close(code=CLOSE_ENDED)
                return

    async def session_status(self, event) -> None:
        status = m.Status.from_message(event)
        state = status.state
        if state in (SessionStatus.LIVE, SessionStatus.RESUMING, SessionStatus.STARTING):
            # After a failover the status names the worker now holding the session.
            worker = status.worker
            if worker is None and (state == SessionStatus.RESUMING or self.worker is None):
                worker = await self._placed_worker()
            self.worker = worker or self.worker
            if state != self.state:
                await database_sync_to_async(services.session_set_state)(
                    session_id=self.session_id, state=state, worker=self.worker
                )
        elif state == SessionStatus.ENDED and self.state != SessionStatus.ENDED:
            await database_sync_to_async(services.session_ended_by_worker)(
                session_id=self.session_id, reason=status.reason
            )
        await super().session_status(event)

    async def session_error(self, event) -> None:
        error = m.Error.from_message(event)
        if error.slot == self.seat.slot:
            seq = None if error.seq < 0 else error.seq
            await self.send_json(ProtocolError(error.code, error.message, seq=seq).as_message())

    async def session_player(self, event) -> None:
        player = m.Player.from_message(event)
        if player.slot == self.seat.slot and player.channel != self.channel_name:
            why = "You opened this world in another tab or window: it plays there now."
            await self.send_json({"type": "error", "code": "replaced", "message": why})
            await self.close(code=CLOSE_REPLACED)

    async def session_presence(self, event) -> None:
        await super().session_presence(event)
        if self.closing or any(p.slot == self.seat.slot for p in self.players):
            return
        # This seat left (Leave: the session's DELETE). Its socket ends too: it kept hearing
        # the session's status, and the page went back to "live" a second after leaving.
        self.closing = True
        self.state = SessionStatus.ENDED
        await self.send_status(reason="left")
        await self.close(code=CLOSE_ENDED)

    async def session_removed(self, event) -> None:
        removed = m.Removed.from_message(event)
        if removed.slot == self.seat.slot and not self.closing:
            self.closing = True
            why = f"You were removed from this session: {removed.reason}"
            await self.send_json({"type": "error", "code": "removed", "message": why})
            await self.close(code=CLOSE_REMOVED)

    async def session_placed(self, event) -> None:
        if self.state != SessionStatus.QUEUED:
            return
        session = await self._refresh()
        if session is None or not session.is_active:
            return
        self.session = session
        self.state = SessionStatus.STARTING
        await self._attach()

    @database_sync_to_async
    def _refresh(self) -> PlaySession | None:
        try:
            return selectors.session_get(session_id=self.session_id)
        except PlaySession.DoesNotExist:
            return None


class WatchConsumer(SessionConsumer):
    """A spectator's socket on a public session: read-only, counted in the viewers."""

    category = ""  # the world's, set by _authorise

    @database_sync_to_async
    def _authorise(self):
        try:
            session = selectors.session_get_watchable(session_id=self.session_id)
        except PlaySession.DoesNotExist:
            # Moderators oversee private sessions too.
            session = selectors.session_for_moderator(
                user=self.scope.get("user"), session_id=self.session_id
            )
            if session is None:
                return None, CLOSE_NOT_FOUND
        if not session.is_active:
            return None, CLOSE_ENDED
        # Read here, in a thread: a moderator's session comes without its world version loaded,
        # and the async handlers must not query.
        self.category = session.world_version.category
        return session, None

    async def joined(self) -> None:
        self.state = self.session.status
        offer = await sync_to_async(cache.get)(choices_key(self.session_id))
        if offer:
            await self.session_choices(offer)  # the pair on offer now, not only the next one
        await self._ask_for_replay()
        self.viewers = await sync_to_async(_viewers_add)(self.session_id, 1)
        await database_sync_to_async(services.session_record_viewers)(
            session_id=self.session_id, viewers=self.viewers
        )
        await self._announce_viewers(self.viewers)

    async def left(self) -> None:
        await self._announce_viewers(await sync_to_async(_viewers_add)(self.session_id, -1))

    async def _announce_viewers(self, viewers: int) -> None:
        await self.channel_layer.group_send(
            session_group(self.session_id), m.Viewers(viewers=viewers).to_message()
        )

    async def handle(self, message) -> None:
        if isinstance(message, Ping):
            await self.send_json({"type": "pong", "t": message.t})
            return
        if isinstance(message, Vote):
            await self._vote(message)
            return
        raise ProtocolError("read_only", "Spectators watch and vote; only players send inputs.")

    async def _ask_for_replay(self) -> None:
        """The worker sends this socket the talk so far and the last world events (a spectator
        who comes late, or reloads, saw an empty chat beside players mid-conversation)."""
        worker = await self._placed_worker()
        if worker is not None:
            watch = m.Watch(session_id=str(self.session_id), channel=self.channel_name)
            await worker_client.send(worker, watch)

    async def _vote(self, message: Vote) -> None:
        if self.category != Category.STORIES:
            raise ProtocolError("unsupported", "There is no story to vote on in this world.")
        worker = await self._placed_worker()
        if worker is None:
            raise ProtocolError("not_running", "The world is not running yet.")
        self.voted[message.choice_id] = message.option
        vote = m.Vote(
            session_id=str(self.session_id),
            voter=self._voter(),
            choice_id=message.choice_id,
            option=message.option,
        )
        await worker_client.send(worker, vote)

    def _voter(self) -> str:
        """One vote per spectator: their account, else their address (a fresh cookie or socket
        is free, so either alone let one client stuff the audience), else their browser
        session, else this socket."""
        user = self.scope.get("user")
        if user is not None and user.is_authenticated:
            return f"user:{user.pk}"
        address = scope_client_ip(self.scope)
        if address:
            return f"ip:{address}"
        store = self.scope.get("session")
        key = store.session_key if store is not None else None
        return f"anon:{key}" if key else f"socket:{self.channel_name}"


def _viewers_add(session_id, delta: int) -> int:
    key = selectors.viewers_key(session_id)
    cache.add(key, 0, timeout=settings.SESSION_MAX_SECONDS + 3600)
    try:
        value = cache.incr(key, delta)
    except ValueError:  # expired between add and incr
        cache.set(key, max(0, delta), timeout=settings.SESSION_MAX_SECONDS + 3600)
        value = max(0, delta)
    return max(0, value)
