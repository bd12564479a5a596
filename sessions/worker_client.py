"""The web side's only way to the inference workers: placement, and messages to a worker's inbox.

Placement (``inference/serving/placement.py``) is Redis when ``REDIS_URL`` is set — every web
process and worker shares one registry and queue — otherwise one process-wide in-memory
placement that the embedded worker shares. Messages are the typed ones of
``inference.serving.messages``; a dead worker's inbox never fails the caller.
"""

import logging
import threading

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

from inference.serving import messages
from inference.serving.placement import InMemoryPlacement, Placement, RedisPlacement
from sessions import world_store
from sessions.models import PlaySession, Seat
from worlds.moderation import policy

log = logging.getLogger(__name__)

_lock = threading.Lock()
_placements: dict[str, Placement] = {}


def get_placement() -> Placement:
    """One placement client per process (per Redis URL)."""
    key = settings.REDIS_URL or "memory"
    with _lock:
        if key not in _placements:
            _placements[key] = (
                RedisPlacement(settings.REDIS_URL) if settings.REDIS_URL else InMemoryPlacement()
            )
        return _placements[key]


def attach_message(
    session: PlaySession, *, restore: bool, seat: Seat | None = None
) -> messages.Attach:
    """What a worker needs to build (or restore) this session's world: its pinned version,
    and the player whose socket sends it (their seat: avatar and camera)."""
    version = session.world_version
    return messages.Attach(
        slot=seat.slot if seat is not None else -1,
        name=seat.name if seat is not None else "",
        persist_key=world_store.key_for(session) if session.is_live_world else "",
        session_id=str(session.id),
        prompt=version.prompt,
        seed=version.seed,
        world_title=version.title,
        restore=restore,
        category=version.category,
        story_opening=version.story_opening,
        character=messages.CharacterCard(
            name=version.character_name,
            persona=version.character_persona,
            greeting=version.character_greeting,
            examples=tuple(version.example_lines()),
        ),
        fork_key=session.forked_from.key if session.forked_from_id else "",
        fork_frame=session.forked_frame,
        fork_slot=session.forked_slot,
    )


def screen_generated_line(text: str) -> bool:
    """May a line the worker's language model wrote (a story option or narration, a character's
    reply or a partial of one) be shown? The same screening as a player's line to the
    character; the worker calls this on its generation thread before it sends the line, so a
    blocked line is never sent (inference/ is Django-free: the entry points pass it in)."""
    return policy.screen_play_text(text, field="say") is None


async def send(worker: str, message: messages.Message) -> None:
    """From a consumer (async)."""
    await get_channel_layer().send(messages.worker_channel(worker), message.to_message())


def send_sync(worker: str, message: messages.Message) -> None:
    """From a service (sync); a failure is logged, never raised."""
    try:
        async_to_sync(send)(worker, message)
    except Exception:  # noqa: BLE001 - a dead worker's inbox must not fail the caller
        log.exception("could not send %s to worker %s", message.TYPE, worker)
