"""Daphne's WebSocket, with a bounded send buffer: a slow client loses frames, not our memory.

Daphne writes every `websocket.send` straight into Twisted's transport, whose send buffer has no
limit: a client that reads slower than 24 frames a second (a phone on a bad link, or a hostile
client that never reads) made the web process keep every frame it had not taken yet. The frame
cap in `sessions.channel_layer` bounds the queue before the consumer; this bounds the one after.

Twisted's own back-pressure does the measuring: a streaming producer registered with the
transport is paused when more than `bufferSize` (64 KB) waits unsent, and resumed once it has
drained. While paused the socket drops binary messages (frames: worthless when late) and still
sends text (status, choices, lines, errors: few, and losing one would lose state).

Daphne upgrades an HTTP connection to a WebSocket by handing over the transport, whose producer
is still the HTTP channel; left there, a full buffer makes it stop reading the client, so a slow
reader's keys went unread too. The WebSocket takes that place instead.
"""

from __future__ import annotations

import logging

from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol
from twisted.internet.interfaces import IPushProducer
from zope.interface import implementer

logger = logging.getLogger(__name__)


@implementer(IPushProducer)
class FrameDroppingWebSocket(WebSocketProtocol):
    send_paused = False

    def connectionMade(self) -> None:
        try:
            self.transport.unregisterProducer()
            self.transport.registerProducer(self, True)
        except Exception:  # a transport without producers: send unbounded, as Daphne does
            logger.exception("socket_buffer: no back-pressure on %r", self.transport)
        super().connectionMade()

    # IPushProducer: called by the transport as its send buffer fills and drains.
    def pauseProducing(self) -> None:
        self.send_paused = True

    def resumeProducing(self) -> None:
        self.send_paused = False

    def stopProducing(self) -> None:
        self.send_paused = True

    def serverSend(self, content: bytes | str, binary: bool = False) -> None:
        if binary and self.send_paused and self.state == self.STATE_OPEN:
            return
        super().serverSend(content, binary)


def install() -> None:
    """Make Daphne build `FrameDroppingWebSocket`s (the factory reads its class per connection)."""
    WebSocketFactory.protocol = FrameDroppingWebSocket
