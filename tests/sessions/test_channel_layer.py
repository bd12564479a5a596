"""The channel layer a web process runs on (`sessions.channel_layer`): a socket that reads
nothing while frames keep coming holds at most its frame backlog, the newest frames, and every
other message."""

import asyncio
import time

from channels.layers import get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer

from inference.serving import messages as m
from sessions.channel_layer import FrameCappedPubSubChannelLayer, FrameDropping
from tests.inference.serving.worker_support import unique

FRAMES = 10_000
BACKLOG = 24
FRAME_BYTES = 1024  # 10 MB in all: under Redis's 32 MB pub/sub output limit even unread


def _frame(i: int) -> dict:
    return m.Frame(data=i.to_bytes(4, "big") + b"\xff" * (FRAME_BYTES - 4), sent=0.0).to_message()


def _status(i: int) -> dict:
    return m.Status(state="live", fps=float(i)).to_message()


def _controls_every(n: int) -> list[int]:
    return list(range(0, FRAMES, n))


def test_the_project_runs_on_the_capped_layer_with_redis():
    assert isinstance(get_channel_layer(), FrameCappedPubSubChannelLayer)


def test_a_full_queue_drops_its_oldest_frame_and_keeps_every_other_message():
    queue = FrameDropping(frame_backlog=3, type_of=lambda data: data[0])
    for item in [
        ("session.frame", 1),
        ("session.status", "a"),
        ("session.frame", 2),
        ("session.frame", 3),
        ("session.frame", 4),
        ("session.error", "b"),
        ("session.frame", 5),
    ]:
        queue.put_nowait(item)
    kept = [queue.get_nowait()[1] for _ in range(queue.qsize())]
    assert kept == ["a", 3, 4, "b", 5]
    assert queue.dropped == 2


async def test_a_socket_that_reads_nothing_holds_only_the_newest_frames(redis_url):
    layer = FrameCappedPubSubChannelLayer(hosts=[redis_url], frame_backlog=BACKLOG)
    worker = RedisPubSubChannelLayer(hosts=[redis_url])  # the sender, as a worker process
    group = unique("test.capped")
    try:
        channel = await layer.new_channel()
        await layer.group_add(group, channel)
        controls = set(_controls_every(500))
        sent = 0
        for i in range(FRAMES):
            if i in controls:
                await worker.group_send(group, _status(i))
                sent += 1
            await worker.group_send(group, _frame(i))
            sent += 1
        queue = layer._get_layer().channels[channel]
        deadline = time.monotonic() + 60
        while queue.qsize() + queue.dropped < sent:  # the receive task still delivering
            assert time.monotonic() < deadline, (queue.qsize(), queue.dropped, sent)
            await asyncio.sleep(0.05)

        assert queue.qsize() == BACKLOG + len(controls)
        held = sum(len(data) for _, data in queue._queue)
        assert held < (BACKLOG + 1) * (FRAME_BYTES + 100) + len(controls) * 200

        received = [await layer.receive(channel) for _ in range(queue.qsize())]
        frames = [
            int.from_bytes(r["data"][:4], "big") for r in received if r["type"] == m.Frame.TYPE
        ]
        statuses = [int(r["fps"]) for r in received if r["type"] == m.Status.TYPE]
        assert frames == list(range(FRAMES - BACKLOG, FRAMES))
        assert statuses == sorted(controls)
    finally:
        await layer.flush()
        await worker.flush()
