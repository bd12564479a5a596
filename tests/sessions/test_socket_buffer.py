"""A slow WebSocket client costs the web process a bounded send buffer: frames it cannot take
are dropped, text still arrives in order (sessions/socket_buffer.py), under a real Daphne."""

import asyncio
import os
import time
from pathlib import Path

import pytest
import websockets
from daphne.ws_protocol import WebSocketFactory

from sessions.socket_buffer import FrameDroppingWebSocket
from tests.stack import Processes, daphne_argv, free_port, port_open

N, SIZE = 200, 256 * 1024  # 50 MB offered, far beyond what loopback's socket buffers hold
TEXTS = [f"text {i}" for i in range(9, N, 10)] + ["done"]


def start_daphne(sockets: str, logdir: Path) -> tuple[Processes, int]:
    port = free_port()
    procs = Processes(logdir, {**os.environ, "FLOOD_SOCKETS": sockets})
    proc = procs.spawn("daphne", daphne_argv(port, "tests.sessions.flood_asgi:application"))
    deadline = time.monotonic() + 30
    while not port_open(port):
        assert proc.poll() is None, procs.tails()
        assert time.monotonic() < deadline, "daphne did not start"
        time.sleep(0.1)
    return procs, port


async def flood(port: int, *, read_after: float, interval: float) -> tuple[list[int], list[str]]:
    """The frame numbers and texts a client receives that starts reading after ``read_after`` s
    (until then it takes one message and lets the rest wait in the socket)."""
    url = f"ws://127.0.0.1:{port}/flood?n={N}&size={SIZE}&interval={interval}"
    frames, texts = [], []
    async with websockets.connect(url, max_queue=1, max_size=2 * SIZE, compression=None) as ws:
        await asyncio.sleep(read_after)
        while not texts or texts[-1] != "done":
            message = await asyncio.wait_for(ws.recv(), timeout=30)
            if isinstance(message, bytes):
                assert len(message) == SIZE
                frames.append(int.from_bytes(message[:4], "big"))
            else:
                texts.append(message)
    return frames, texts


@pytest.fixture(params=["ours", "daphne"])
def daphne_port(request, tmp_path):
    procs, port = start_daphne(request.param, tmp_path)
    yield request.param, port
    procs.stop()


def test_a_client_that_does_not_read_gets_few_frames_and_every_text_in_order(daphne_port):
    sockets, port = daphne_port
    # The server sends everything within about a second; the client reads only after 4 s.
    frames, texts = asyncio.run(flood(port, read_after=4.0, interval=0.004))
    assert texts == TEXTS
    assert frames == sorted(frames)
    if sockets == "daphne":  # the control: Daphne alone buffers all 50 MB for the client
        assert frames == list(range(N))
    else:
        assert len(frames) < N // 2, f"{len(frames)} of {N} frames were buffered for the client"
        assert frames[0] == 0  # the first frames went out before the buffer filled


def test_a_client_that_reads_gets_its_frames(daphne_port):
    sockets, port = daphne_port
    frames, texts = asyncio.run(flood(port, read_after=0.0, interval=0.02))
    assert texts == TEXTS
    # A reader keeps the buffer drained, so nearly nothing is dropped (some slack for a busy CI).
    assert len(frames) >= 0.9 * N, f"only {len(frames)} of {N} frames reached a reading client"


def test_the_gallery_app_installs_the_bounded_socket():
    import gallery.asgi  # noqa: F401

    assert WebSocketFactory.protocol is FrameDroppingWebSocket
