"""Fixtures for the web side of live play (imported by the play test modules).

Placement and the channel layer are the real Redis (REDIS_URL, db 13 in our runs); every test
starts from an empty placement. "Worker slots" are real registry entries kept alive by
heartbeats, for tests about the web side that need capacity but no frames.
"""

import itertools
import threading
import uuid
from urllib.parse import urlparse

import pytest
import redis
from django.conf import settings

from gallery.models import User
from sessions import worker_client
from worlds.models import Category, World, WorldStatus, WorldVersion

_counter = itertools.count()


@pytest.fixture
def clean_placement(redis_url):
    """Empty placement, queue, cache and snapshots on our own Redis db before and after."""
    db = int(urlparse(redis_url).path.strip("/") or 0)
    assert db > 10, "play tests flush their Redis db: point REDIS_URL at db 11-15"
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    worker_client._placements.clear()
    yield worker_client.get_placement()
    client.flushdb()
    worker_client._placements.clear()


class WorkerSlots:
    """Registry entries for workers that exist only as capacity (heartbeat thread, no loop)."""

    def __init__(self, placement):
        self.placement = placement
        self.names: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self._thread.start()

    def add(self, *, capacity: int) -> str:
        name = f"web-test-{uuid.uuid4().hex[:8]}"
        self.placement.register_worker(name, device="cpu", capacity=capacity)
        self.names.append(name)
        return name

    def kill(self, name: str) -> None:
        self.names.remove(name)
        self.placement.deregister(name)

    def _beat(self):
        while not self._stop.wait(0.3):
            for name in list(self.names):
                self.placement.heartbeat(name, load=0, fps=24.0)

    def close(self):
        self._stop.set()
        self._thread.join(timeout=2)
        for name in self.names:
            self.placement.deregister(name)


@pytest.fixture
def worker_slots(clean_placement):
    slots = WorkerSlots(clean_placement)
    yield slots
    slots.close()


def make_user(name: str | None = None) -> User:
    name = name or f"user{next(_counter)}"
    return User.objects.create_user(username=name, password="pw-for-tests-123")


def make_world(
    *,
    creator: User | None = None,
    status: str = WorldStatus.PUBLISHED,
    prompt: str = "",
    category: str = Category.GAMES,
    **spec,
) -> World:
    """spec: story_opening, character_name, character_persona, character_greeting."""
    creator = creator or make_user()
    n = next(_counter)
    world = World.objects.create(
        slug=f"world-{n}-{uuid.uuid4().hex[:6]}",
        title=f"Pine forest {n}",
        category=category,
        prompt=prompt or "a snowy pine forest with a frozen lake",
        seed=7 + n,
        status=status,
        creator=creator,
        **spec,
    )
    version = WorldVersion.objects.create(
        world=world,
        number=1,
        title=world.title,
        category=world.category,
        prompt=world.prompt,
        seed=world.seed,
        **spec,
    )
    world.current_version = version
    world.save(update_fields=["current_version"])
    return world


@pytest.fixture
def player(db):
    return make_user("player")


@pytest.fixture
def outsider(db):
    return make_user("outsider")


@pytest.fixture
def world(db):
    return make_world()


@pytest.fixture
def short_limits(settings):
    settings.SESSION_IDLE_SECONDS = 300
    settings.SESSION_MAX_SECONDS = 1800
    settings.SESSION_RECONNECT_GRACE_SECONDS = 30
    return settings


def redis_client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL)


class Inbox:
    """What a worker would receive on its channel, collected by one background task.

    One task owns `receive()` (cancelling a pub/sub receive unsubscribes); it is listening once
    a probe sent to the channel comes back, so nothing sent afterwards is lost.
    """

    def __init__(self, layer, channel: str):
        self.layer = layer
        self.channel = channel
        self.queue = None

    async def __aenter__(self):
        import asyncio

        self.queue = asyncio.Queue()
        self.task = asyncio.create_task(self._pump())
        probe = {"type": "test.probe", "nonce": uuid.uuid4().hex}
        while True:
            await self.layer.send(self.channel, probe)
            try:
                message = await asyncio.wait_for(self.queue.get(), 0.2)
            except TimeoutError:
                continue
            if message == probe:
                return self

    async def __aexit__(self, *exc):
        import asyncio
        import contextlib

        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    async def _pump(self):
        while True:
            self.queue.put_nowait(await self.layer.receive(self.channel))

    async def next(self, kind: str | None = None, timeout: float = 30.0) -> dict:
        import asyncio

        async def find():
            while True:
                message = await self.queue.get()
                if message.get("type") == "test.probe":
                    continue
                if kind is None or message.get("type") == kind:
                    return message

        return await asyncio.wait_for(find(), timeout)

    def pending(self) -> list[dict]:
        out = []
        while not self.queue.empty():
            message = self.queue.get_nowait()
            if message.get("type") != "test.probe":
                out.append(message)
        return out
