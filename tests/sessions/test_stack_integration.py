"""The whole production path as separate processes: Daphne, two `inference_worker` processes and
Redis. A real WebSocket client plays 100 frames, holds `d` and sees the view move; a second
client watches; the serving worker is killed (-9) and play resumes on the other one."""

import asyncio
import json
import signal

import numpy as np
import pytest
import websockets
from django.db import connection
from django.test import Client
from rest_framework.authtoken.models import Token

from inference.serving.frames import decode_header, frame_jpeg
from inference.serving.placement import RedisPlacement
from tests.inference.serving.worker_support import WAIT_S, pixels, unique
from tests.sessions.play_fixtures import make_user, make_world
from tests.stack import (
    Processes,
    clear_placement,
    daphne_argv,
    database_url,
    free_port,
    stack_env,
    worker_argv,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def stack(redis_url, tmp_path):
    """Daphne on a free port + two worker processes, all on this test's database and Redis."""
    clear_placement(redis_url)
    procs = Processes(
        tmp_path,
        stack_env(database_url=database_url(connection.settings_dict), redis_url=redis_url),
    )
    port = free_port()
    procs.spawn("daphne", daphne_argv(port))
    workers = {}
    for label in ("a", "b"):
        name = unique(f"stack-{label}")
        workers[name] = procs.spawn(name, worker_argv(name, capacity=2))
    placement = RedisPlacement(redis_url)
    try:
        procs.wait_up(port=port, placement=placement, workers=2, timeout=WAIT_S * 3)
        yield {"port": port, "workers": workers, "placement": placement}
    finally:
        procs.stop()
        clear_placement(redis_url)


class Client_:
    """One WebSocket client: binary frames and JSON messages, collected as they come."""

    def __init__(self, ws):
        self.ws = ws
        self.queue: asyncio.Queue = asyncio.Queue()
        self.statuses: list[dict] = []
        self.task = asyncio.create_task(self._pump())

    async def _pump(self):
        async for message in self.ws:
            if isinstance(message, bytes):
                self.queue.put_nowait(("frame", decode_header(message), frame_jpeg(message)))
            else:
                body = json.loads(message)
                if body.get("type") == "status":
                    self.statuses.append(body)
                self.queue.put_nowait(("json", body, None))

    async def next(self, kind, predicate=lambda body: True, timeout=WAIT_S):
        async def find():
            while True:
                got = await self.queue.get()
                if got[0] == kind and predicate(got[1]):
                    return got

        return await asyncio.wait_for(find(), timeout)

    async def frames(self, count):
        return [(await self.next("frame"))[1:] for _ in range(count)]

    async def send(self, body):
        await self.ws.send(json.dumps(body))


def _mean_diff(a: bytes, b: bytes) -> float:
    return float(np.abs(pixels(a).astype(int) - pixels(b).astype(int)).mean())


async def test_play_watch_and_survive_a_killed_worker_over_real_websockets(stack):
    port, placement = stack["port"], stack["placement"]
    user = await _sync(make_user, "stack-player")
    # clear weather: standing still, only creatures change the frame (falling snow would too)
    world = await _sync(make_world, creator=user, prompt="a pine forest on a clear sunny day")
    token = await _sync(lambda: Token.objects.create(user=user).key)
    cookie = await _sync(_session_cookie, user)

    import httpx

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        response = await http.post(
            "/api/sessions/",
            json={"world": world.slug},
            headers={"Authorization": f"Token {token}"},
        )
    assert response.status_code == 201, response.text
    session_id = response.json()["id"]
    origin = f"http://127.0.0.1:{port}"
    url = f"ws://127.0.0.1:{port}"

    async with websockets.connect(
        f"{url}/ws/play/{session_id}/",
        origin=origin,
        proxy=None,
        additional_headers={"Cookie": f"sessionid={cookie}"},
    ) as play_ws:
        player = Client_(play_ws)
        await player.send({"type": "input", "seq": 1, "keys": []})
        idle = await player.frames(40)

        async def hold_d():
            seq = 2
            while True:
                await player.send({"type": "input", "seq": seq, "keys": ["d"]})
                seq += 1
                await asyncio.sleep(0.25)

        holding = asyncio.create_task(hold_d())
        moving = await player.frames(60)

        async with websockets.connect(
            f"{url}/ws/watch/{session_id}/", origin=origin, proxy=None
        ) as watch_ws:
            spectator = Client_(watch_ws)
            watched = await spectator.frames(5)
            holding.cancel()

            serving = placement.worker_of(session_id)
            survivor = next(name for name in stack["workers"] if name != serving)
            stack["workers"][serving].send_signal(signal.SIGKILL)
            await player.next(
                "json", lambda b: b.get("type") == "status" and b.get("state") == "resuming"
            )
            after = await player.frames(10)
            moved_to = placement.worker_of(session_id)
            spectator.task.cancel()
        player.task.cancel()

    numbers = [header[2] for header, _ in idle + moving]
    assert len(numbers) == 100 and numbers == sorted(numbers)
    assert all(header[3] >= 2 for header, _ in moving[30:])  # the held key's seq is echoed
    assert all(header[0] == 1 for header, _ in watched)
    assert any(s.get("viewers", 0) >= 1 for s in player.statuses + spectator.statuses)
    assert moved_to == survivor
    assert len(after) == 10 and after[-1][0][2] > after[0][0][2]
    # Holding `d` moves the view: far more change than the same time standing still.
    idle_change = _mean_diff(idle[-21][1], idle[-1][1])
    moved_change = _mean_diff(idle[-1][1], moving[-1][1])
    assert moved_change > max(2 * idle_change, 1.0)


async def _sync(fn, *args, **kwargs):
    from asgiref.sync import sync_to_async

    def call():
        try:
            return fn(*args, **kwargs)
        finally:
            connection.close()  # a connection left open blocks dropping the test database

    return await sync_to_async(call, thread_sensitive=False)()


def _session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value
