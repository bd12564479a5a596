"""Shared pieces of the worker, failover and stack tests: a group listener, a running
in-process worker, and fixtures (engine once per module, Redis layer, own-prefix placement, a
running worker) that a test module imports to use."""

import asyncio
import contextlib
import uuid

import pytest
import redis
import simplejpeg
from channels_redis.pubsub import RedisPubSubChannelLayer

from inference.serving.config import WorkerConfig
from inference.serving.frames import decode_header, frame_jpeg
from inference.serving.messages import camera_group, session_group, worker_channel
from inference.serving.placement import RedisPlacement
from inference.serving.worker import InferenceWorker
from inference.world.engine import WorldEngine

WAIT_S = 60.0  # generous: the 2-core machine is shared with a training run


@pytest.fixture(scope="module")
def engine():
    return WorldEngine.load("cpu")


@pytest.fixture
async def layer(redis_url):
    layer = RedisPubSubChannelLayer(hosts=[redis_url])
    yield layer
    await layer.flush()


def clear_prefix(url: str, prefix: str) -> None:
    client = redis.Redis.from_url(url)
    for key in client.scan_iter(f"{prefix}:*"):
        client.delete(key)


@pytest.fixture
def placement(redis_url):
    """Placement under a prefix of its own: tests never see each other's workers."""
    prefix = f"px:test:{uuid.uuid4().hex}"
    yield RedisPlacement(redis_url, prefix=prefix)
    clear_prefix(redis_url, prefix)


@pytest.fixture
async def worker(layer, placement, engine):
    async with running_worker(
        layer=layer, placement=placement, engine=engine, capacity=2, snapshot_every_s=0.5
    ) as worker:
        yield worker


def unique(name: str) -> str:
    # Pub/sub channel names are global across Redis databases: never collide with other suites.
    return f"{name}-{uuid.uuid4().hex[:8]}"


class GroupListener:
    """Everything the worker sends to one session's group and to one seat's camera (slot 0 by
    default), as that player's consumer sees it.

    One background task owns ``receive()``: cancelling a pub/sub receive unsubscribes it.
    """

    def __init__(self, layer, session_id: str, slot: int | None = 0):
        self.layer = layer
        self.groups = [session_group(session_id)]
        if slot is not None:
            self.groups.append(camera_group(session_id, slot))
        self.queue: asyncio.Queue = asyncio.Queue()
        self.seen: list[dict] = []

    async def __aenter__(self):
        self.channel = await self.layer.new_channel()
        for group in self.groups:
            await self.layer.group_add(group, self.channel)
        self.task = asyncio.create_task(self._pump())
        return self

    async def __aexit__(self, *exc):
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        for group in self.groups:
            with contextlib.suppress(Exception):
                await self.layer.group_discard(group, self.channel)

    async def _pump(self):
        while True:
            self.queue.put_nowait(await self.layer.receive(self.channel))

    async def next(self, predicate=lambda m: True, timeout: float = WAIT_S) -> dict:
        async def find():
            while True:
                message = await self.queue.get()
                self.seen.append(message)
                if predicate(message):
                    return message

        return await asyncio.wait_for(find(), timeout)

    async def status(self, state: str, timeout: float = WAIT_S) -> dict:
        return await self.next(
            lambda m: m["type"] == "session.status" and m["state"] == state, timeout
        )

    async def frames(self, count: int, timeout: float = WAIT_S) -> list[tuple[tuple, bytes]]:
        out = []
        while len(out) < count:
            message = await self.next(lambda m: m["type"] == "session.frame", timeout)
            out.append((decode_header(message["data"]), frame_jpeg(message["data"])))
        return out


def pixels(jpeg: bytes):
    return simplejpeg.decode_jpeg(jpeg, colorspace="RGB")


def attach_message(session_id: str, *, prompt="a sunny meadow with a pond", seed=7, restore=False):
    return {
        "type": "session.attach",
        "session_id": session_id,
        "prompt": prompt,
        "seed": seed,
        "world_title": "Meadow",
        "restore": restore,
    }


@contextlib.asynccontextmanager
async def running_worker(
    *, layer, placement, engine, name=None, narrator=None, screen=None, world_store=None, **config
):
    """A started worker; `config`: its ``WorkerConfig`` fields."""
    worker = InferenceWorker(
        WorkerConfig(name=name or unique("w"), **config),
        channel_layer=layer,
        placement=placement,
        engine=engine,
        narrator=narrator,
        screen=screen,
        world_store=world_store,
    )
    task = asyncio.create_task(worker.run())
    try:
        await asyncio.wait_for(worker.ready.wait(), WAIT_S)
        yield worker
    finally:
        try:
            if not task.done():
                await asyncio.wait_for(worker.stop(handover=False), WAIT_S)
        finally:
            task.cancel()  # a stop that hangs fails this test instead of stalling the suite
            await asyncio.gather(task, return_exceptions=True)


async def send(layer, worker: InferenceWorker | str, message: dict) -> None:
    name = worker if isinstance(worker, str) else worker.name
    await layer.send(worker_channel(name), message)


def without_clock(description: dict) -> dict:
    """A world's description but its minute, which runs on while frames are made."""
    return {k: v for k, v in description.items() if k != "clock"}
