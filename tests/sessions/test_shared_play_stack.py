"""Shared play on the real stack: Daphne, two `inference_worker` processes, Redis and the S3
server. Three WebSocket clients play one story world: each sees the others' avatars where they
stand, an event from one reaches all, votes resolve by majority and by timeout, and a worker
killed with -9 moves every player. A Live world keeps a change after everyone left (in S3)."""

import asyncio
import json
import signal

import httpx
import numpy as np
import pytest
import websockets
from django.db import connection
from rest_framework.authtoken.models import Token

from inference.serving.frames import FLAG_RESTORED, decode_header, frame_jpeg
from inference.world import spec
from inference.world.decoder import scaled
from sessions.world_store import PREFIX
from tests.inference.serving.worker_support import WAIT_S, pixels, unique
from tests.sessions.play_fixtures import make_user, make_world
from tests.sessions.test_stack_integration import _session_cookie, _sync
from tests.stack import (
    Processes,
    clear_placement,
    daphne_argv,
    database_url,
    free_port,
    stack_env,
    worker_argv,
)
from worlds.models import Category

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

VOTE_S = 3.0


@pytest.fixture
def stack(redis_url, tmp_path, s3_server):
    """Daphne + two workers (8 players each) on this test's database, Redis and S3 bucket."""
    clear_placement(redis_url)
    env = stack_env(
        database_url=database_url(connection.settings_dict),
        redis_url=redis_url,
        S3_BUCKET=s3_server["bucket"],
        S3_ENDPOINT_URL=s3_server["endpoint_url"],
        S3_ACCESS_KEY=s3_server["access_key"],
        S3_SECRET_KEY=s3_server["secret_key"],
        STORY_VOTE_SECONDS=str(VOTE_S),
        NARRATIVE_LM="off",  # votes, not prose, are under test here (the grammar writes fast)
        SESSION_MAX_ANON_PER_IP="50",
    )
    procs = Processes(tmp_path, env)
    port = free_port()
    procs.spawn("daphne", daphne_argv(port))
    workers = {}
    for label in ("a", "b"):
        name = unique(f"shared-{label}")
        workers[name] = procs.spawn(name, worker_argv(name, capacity=8))
    from inference.serving.placement import RedisPlacement

    placement = RedisPlacement(redis_url)
    try:
        procs.wait_up(port=port, placement=placement, workers=2, timeout=WAIT_S * 3)
        yield {"port": port, "workers": workers, "placement": placement, "s3": s3_server}
    finally:
        procs.stop()
        clear_placement(redis_url)


class Player:
    """One WebSocket client: frames in a queue, every JSON message kept (nothing is dropped
    while waiting for something else)."""

    def __init__(self, socket):
        self.socket = socket
        self.frames: asyncio.Queue = asyncio.Queue()
        self.messages: list[dict] = []
        self.arrived = asyncio.Event()
        self.task = asyncio.create_task(self._pump())

    async def _pump(self):
        async for message in self.socket:
            if isinstance(message, bytes):
                self.frames.put_nowait((decode_header(message), frame_jpeg(message)))
            else:
                self.messages.append(json.loads(message))
                self.arrived.set()

    async def frame(self, predicate=lambda header: True, timeout=WAIT_S):
        async def find():
            while True:
                header, jpeg = await self.frames.get()
                if predicate(header):
                    return header, jpeg

        return await asyncio.wait_for(find(), timeout)

    async def json(self, predicate, timeout=WAIT_S) -> dict:
        """The first message so far (or to come) that matches."""

        async def find():
            seen = 0
            while True:
                for body in self.messages[seen:]:
                    if predicate(body):
                        return body
                seen = len(self.messages)
                self.arrived.clear()
                await self.arrived.wait()

        return await asyncio.wait_for(find(), timeout)

    async def send(self, body):
        await self.socket.send(json.dumps(body))

    def status(self) -> dict:
        return [m for m in self.messages if m.get("type") == "status"][-1]


def _avatar_nearest(jpeg: bytes, dx: int, dy: int) -> int:
    """Which avatar colour the frame shows at this offset from its centre (the viewer)."""
    image = pixels(jpeg).astype(int)
    cx, cy = (int(scaled(spec.FRAME // 2 + d)) for d in (dx, dy))  # frames are drawn at 1.5x
    patch = image[cy - 3 : cy + 3, cx - 3 : cx + 3].reshape(-1, 3)
    distances = [np.abs(patch - np.array(rgb)).sum(1).min() for rgb in spec.AVATAR_RGB]
    return int(np.argmin(distances))


async def _avatars_seen(
    player: Player, viewer: int, slots: list[int], restored: bool = False
) -> list[int]:
    """The avatar colours the viewer's frames show at each of these slots' spawn points: the
    first frame (from the restored one on, if ``restored``) that shows ``slots``, or the last
    in WAIT_S. Cameras join one by one, so a viewer's earliest frames may not show everyone."""
    vx, vy = spec.player_spawn(viewer)
    deadline = asyncio.get_running_loop().time() + WAIT_S
    wanted = (lambda h: bool(h[1] & FLAG_RESTORED)) if restored else (lambda h: True)
    seen: list[int] = []
    while seen != slots and asyncio.get_running_loop().time() < deadline:
        _, jpeg = await player.frame(wanted)
        wanted = lambda h: True  # noqa: E731 (after the first, any frame)
        seen = [
            _avatar_nearest(jpeg, spec.player_spawn(s)[0] - vx, spec.player_spawn(s)[1] - vy)
            for s in slots
        ]
    return seen


def _brightness(jpeg: bytes) -> float:
    return float(pixels(jpeg).mean())


def _is(kind: str, **fields):
    return lambda body: (
        body.get("type") == kind and all(body.get(k) == v for k, v in fields.items())
    )


async def _connect(url: str, origin: str, cookie: str):
    return await websockets.connect(
        url, origin=origin, proxy=None, additional_headers={"Cookie": f"sessionid={cookie}"}
    )


async def test_three_players_share_one_world_vote_and_survive_a_killed_worker(stack):
    port, placement = stack["port"], stack["placement"]
    creator = await _sync(make_user, "host")
    world = await _sync(
        make_world,
        creator=creator,
        category=Category.STORIES,
        prompt="a sunny meadow with a pond",
        story_opening="The three of you wake in a meadow.",
    )
    token = await _sync(lambda: Token.objects.create(user=creator).key)
    cookie = await _sync(_session_cookie, creator)
    base, origin = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=base, timeout=WAIT_S) as http:
        created = await http.post(
            "/api/sessions/",
            json={"world": world.slug, "shared": True, "public": True},
            headers={"Authorization": f"Token {token}"},
        )
        assert created.status_code == 201, created.text
        session_id = created.json()["id"]
        cookies = [cookie]
        for name in ("Bea", "Cy"):
            async with httpx.AsyncClient(base_url=base, timeout=WAIT_S) as guest:
                joined = await guest.post(f"/api/sessions/{session_id}/join/", json={"name": name})
                assert joined.status_code == 201, joined.text
                cookies.append(guest.cookies["sessionid"])
    sockets = [
        await _connect(f"ws://127.0.0.1:{port}/ws/play/{session_id}/", origin, c) for c in cookies
    ]
    players = [Player(s) for s in sockets]
    try:
        # Each player sees everyone where they stand (spawn points by slot), in their colour:
        # on the first frames made once all three are in (the first player's earliest frames
        # were drawn before the others joined).
        for viewer, player in enumerate(players):
            seen = await _avatars_seen(player, viewer, [0, 1, 2])
            assert seen == [0, 1, 2], f"player {viewer} sees avatars {seen}"
        statuses = [p.status() for p in players]
        for slot, status in enumerate(statuses):
            names = [(p["slot"], p["name"], p["you"]) for p in status["players"]]
            assert names == [(0, "host", slot == 0), (1, "Bea", slot == 1), (2, "Cy", slot == 2)]

        # An event from one player reaches everyone, with who sent it.
        await players[1].send({"type": "prompt", "seq": 7, "text": "it starts to snow"})
        events = [await p.json(_is("event", seq=7)) for p in players]
        assert [(e["status"], e["by"], e["you"]) for e in events] == [
            ("applied", "Bea", False),
            ("applied", "Bea", True),
            ("applied", "Bea", False),
        ]

        # Every player's pick is a vote: the majority wins once everyone voted.
        offer = await players[0].json(lambda b: _is("choices")(b) and len(b["options"]) == 2)
        cid = offer["choice_id"]
        # one vote at a time, each counted before the next (two at once may be counted together)
        for client, option, votes in zip(players[:2], (0, 1), ([1, 0], [1, 1]), strict=True):
            await client.send({"type": "choose", "choice_id": cid, "option": option})
            counted = await players[2].json(
                lambda b, v=votes: _is("choices")(b) and b["votes"] == v
            )
            assert counted["closes_in"] is not None and counted["choice_id"] == cid
        await players[2].send({"type": "choose", "choice_id": cid, "option": 1})
        resolved = await players[0].json(
            lambda b: _is("choices")(b) and b["choice_id"] not in ("", cid) and b["options"]
        )
        assert resolved["picked"] == offer["options"][1]

        # One vote alone closes when the window runs out, and wins.
        await players[0].send({"type": "choose", "choice_id": resolved["choice_id"], "option": 0})
        timed = await players[1].json(
            lambda b: (
                _is("choices")(b)
                and b["choice_id"] not in ("", cid, resolved["choice_id"])
                and b["options"]
            ),
            timeout=VOTE_S + WAIT_S,
        )
        assert timed["picked"] == resolved["options"][0]

        # kill -9 the worker: the whole session moves, every player resumes in the same world.
        serving = placement.worker_of(session_id)
        survivor = next(name for name in stack["workers"] if name != serving)
        stack["workers"][serving].send_signal(signal.SIGKILL)
        for client in players:
            await client.json(_is("status", state="resuming"))
        for viewer, client in enumerate(players):
            others = [s for s in range(3) if s != viewer]
            seen = await _avatars_seen(client, viewer, others, restored=True)
            assert seen == others, f"after the failover player {viewer} sees avatars {seen}"
        assert placement.worker_of(session_id) == survivor
        assert placement.seats_of(session_id) == 3
    finally:
        for client, socket in zip(players, sockets, strict=True):
            client.task.cancel()
            await socket.close()


async def test_a_live_world_keeps_its_change_for_the_next_visitor(stack):
    port = stack["port"]
    world = await _sync(
        make_world, category=Category.LIVE, prompt="a sunny meadow with a pond at midday"
    )
    base, origin = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}"

    async def visit():
        http = httpx.AsyncClient(base_url=base, timeout=WAIT_S)
        opened = await http.post("/api/sessions/", json={"world": world.slug, "name": "Walker"})
        assert opened.status_code == 201, opened.text
        session_id = opened.json()["id"]
        socket = await _connect(
            f"ws://127.0.0.1:{port}/ws/play/{session_id}/", origin, http.cookies["sessionid"]
        )
        return http, session_id, socket, Player(socket)

    http, first_id, socket, player = await visit()
    try:
        day = [(await player.frame())[1] for _ in range(5)]
        await player.send({"type": "prompt", "seq": 3, "text": "night falls"})
        assert (await player.json(_is("event", seq=3)))["status"] == "applied"
        night = [(await player.frame())[1] for _ in range(30)][-5:]
        assert _brightness(night[-1]) < 0.8 * _brightness(day[-1])
        left = await http.delete(f"/api/sessions/{first_id}/")  # the last player leaves
        assert left.json()["status"] == "ended"
    finally:
        player.task.cancel()
        await socket.close()
        await http.aclose()

    s3 = stack["s3"]
    for _ in range(100):  # the worker keeps the world as the session ends
        listed = s3["client"].list_objects_v2(Bucket=s3["bucket"], Prefix=f"{PREFIX}/{world.pk}/")
        if listed.get("KeyCount"):
            break
        await asyncio.sleep(0.1)
    assert listed.get("KeyCount") == 1

    http, second_id, socket, player = await visit()
    try:
        back = [(await player.frame())[1] for _ in range(5)]
    finally:
        player.task.cancel()
        await socket.close()
        await http.aclose()
    assert second_id != first_id
    # The next visitor finds it as it was left: still night, not the fresh world's midday.
    assert abs(_brightness(back[-1]) - _brightness(night[-1])) < abs(
        _brightness(back[-1]) - _brightness(day[-1])
    )
    assert json.dumps(listed["Contents"][0]["Key"]).startswith(f'"{PREFIX}/')
