"""The Redis pub/sub channel layer with a bounded frame backlog per channel.

channels_redis's `RedisPubSubLoopLayer` gives every channel an unbounded `asyncio.Queue()` that
its receive task fills with `put_nowait` as fast as Redis delivers. A socket whose consumer falls
behind (a CPU-starved web process, a slow client) so holds every frame since it fell behind:
24 frames a second of 5-10 KB per socket, without limit (the soak's Daphne grew 130 -> 808 MB).
`FrameDropping` keeps at most `frame_backlog` frames per channel and drops the oldest when a
newer one comes: a frame stream needs only the latest (`sessions.frame_lag` would drop the stale
ones anyway, after they had sat in memory). Every other message (status, choices, lines, errors)
is kept whatever the backlog: those are few, and losing one would lose state.

A subclass of the layer rather than a buffer in the consumer: the consumer only sees a message
after its own task gets to it, which is exactly what a starved process cannot do, while this
queue is where the receive task parks what the consumer has not read yet.
"""

import asyncio
from collections import deque

from channels_redis.pubsub import RedisPubSubChannelLayer, RedisPubSubLoopLayer
from channels_redis.utils import _wrap_close

from inference.serving.messages import Frame

DEFAULT_FRAME_BACKLOG = 24  # a second at 24 fps; frame_lag drops frames 0.5 s stale


class FrameDropping(asyncio.Queue):
    """A channel's queue of serialized messages that holds at most ``frame_backlog`` frames."""

    def __init__(self, *, frame_backlog: int, type_of):
        self.frame_backlog = frame_backlog
        self._type_of = type_of  # serialized message -> its "type"
        self.dropped = 0
        super().__init__()

    def _init(self, maxsize):
        self._queue: deque[tuple[bool, bytes]] = deque()  # (is a frame, serialized message)
        self._frames = 0

    def _put(self, data: bytes) -> None:
        frame = self._type_of(data) == Frame.TYPE
        if frame and self._frames >= self.frame_backlog:
            self._drop_oldest_frame()
        self._queue.append((frame, data))
        self._frames += frame

    def _get(self) -> bytes:
        frame, data = self._queue.popleft()
        self._frames -= frame
        return data

    def _drop_oldest_frame(self) -> None:
        for i, (frame, _) in enumerate(self._queue):
            if frame:
                del self._queue[i]
                self._frames -= 1
                self.dropped += 1
                return


class FrameCappedLoopLayer(RedisPubSubLoopLayer):
    def __init__(self, *args, frame_backlog: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.frame_backlog = frame_backlog

    def _type_of(self, data: bytes):
        message = self.channel_layer.deserialize(data)
        return message.get("type") if isinstance(message, dict) else None

    async def _subscribe_to_channel(self, channel):
        # As the base class, with our queue in place of asyncio.Queue().
        self.channels[channel] = FrameDropping(
            frame_backlog=self.frame_backlog, type_of=self._type_of
        )
        await self._get_shard(channel).subscribe(channel)


class FrameCappedPubSubChannelLayer(RedisPubSubChannelLayer):
    """`RedisPubSubChannelLayer` whose channels keep at most ``frame_backlog`` frames queued."""

    def __init__(self, *args, frame_backlog: int = DEFAULT_FRAME_BACKLOG, **kwargs):
        if frame_backlog < 1:
            raise ValueError("frame_backlog must be at least 1")
        super().__init__(*args, **kwargs)
        self.frame_backlog = frame_backlog

    def _get_layer(self):
        # As the base class, building our loop layer: one per event loop, flushed as it closes.
        loop = asyncio.get_running_loop()
        if loop not in self._layers:
            self._layers[loop] = FrameCappedLoopLayer(
                *self._args, **self._kwargs, channel_layer=self, frame_backlog=self.frame_backlog
            )
            _wrap_close(self, loop)
        return self._layers[loop]
