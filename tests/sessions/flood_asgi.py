"""An ASGI app for tests/sessions/test_socket_buffer.py, run by a real Daphne: on connect it
sends ``n`` binary messages of ``size`` bytes, ``interval`` seconds apart, with a text message
after every tenth and a final text "done". FLOOD_SOCKETS=daphne leaves Daphne's own socket (the
control); anything else installs ours, as gallery/asgi.py does."""

import asyncio
import os
from urllib.parse import parse_qs

from sessions import socket_buffer

if os.environ.get("FLOOD_SOCKETS") != "daphne":
    socket_buffer.install()


async def application(scope, receive, send):
    assert scope["type"] == "websocket"
    query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
    n, size, interval = int(query["n"]), int(query["size"]), float(query["interval"])
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    for i in range(n):
        await send({"type": "websocket.send", "bytes": i.to_bytes(4, "big") * (size // 4)})
        if i % 10 == 9:
            await send({"type": "websocket.send", "text": f"text {i}"})
        await asyncio.sleep(interval)
    await send({"type": "websocket.send", "text": "done"})
    while (await receive())["type"] != "websocket.disconnect":
        pass
