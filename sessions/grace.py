"""The reconnect grace: a player whose socket closed gets this long to come back to their seat.

The timer runs in the event loop of the web process that held the socket: it is seconds long,
and a timer lost with its process is caught by the periodic reaper (the ``reap-play-sessions``
beat task, or the embedded default's own reaper), which ends sessions abandoned past the grace.
"""

import asyncio

from channels.db import database_sync_to_async
from django.conf import settings

from sessions import seats

# Timers outlive their consumer; keep them referenced so they are not collected.
_timers: set[asyncio.Task] = set()


def start(seat_id) -> None:
    """Free the seat (the session ends with its last one) if its player does not come back
    within the reconnect grace."""
    grace = settings.SESSION_RECONNECT_GRACE_SECONDS

    async def wait_then_end():
        await asyncio.sleep(grace + 0.5)
        await database_sync_to_async(seats.seat_leave_if_abandoned)(seat_id=seat_id)

    task = asyncio.get_running_loop().create_task(wait_then_end())
    _timers.add(task)
    task.add_done_callback(_timers.discard)
