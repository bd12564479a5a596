"""Recordings on the real stack: Daphne, an `inference_worker` process, Redis and the S3
server. Two players share a story world for two minutes (keys, an event, a story pick); the
run's recording replays, in this process, to every frame each of them was sent, byte for byte.
The run exports to an MP4 read back with its frame count and metadata, and a fork from its
middle plays on from the world as it was there."""

import asyncio
import base64
import io
import os

import av
import httpx
import pytest
from django.db import connection
from rest_framework.authtoken.models import Token

from inference.serving import recording as rec
from inference.serving.frames import jpeg
from inference.world.engine import WorldEngine
from inference.world.state import state_from_bytes
from sessions.world_store import StorageWorldStore
from tests.inference.serving.worker_support import WAIT_S, unique
from tests.sessions.play_fixtures import make_user, make_world
from tests.sessions.test_shared_play_stack import Player, _connect, _is
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

PLAY_S = float(os.environ.get("RECORDING_TEST_SECONDS", "120"))  # the two minutes
WALKS = [["d"], ["s"], ["a", "w"], [], ["s", "d"], ["w"]]


@pytest.fixture
def stack(redis_url, tmp_path, s3_server, s3_storage):
    clear_placement(redis_url)
    env = stack_env(
        database_url=database_url(connection.settings_dict),
        redis_url=redis_url,
        S3_BUCKET=s3_server["bucket"],
        S3_ENDPOINT_URL=s3_server["endpoint_url"],
        S3_ACCESS_KEY=s3_server["access_key"],
        S3_SECRET_KEY=s3_server["secret_key"],
        NARRATIVE_LM="off",  # a pick, not prose, is under test (the grammar writes fast)
        STORY_VOTE_SECONDS="2",
    )
    procs = Processes(tmp_path, env)
    port = free_port()
    procs.spawn("daphne", daphne_argv(port))
    procs.spawn("worker", worker_argv(unique("rec"), capacity=4))
    from inference.serving.placement import RedisPlacement

    try:
        procs.wait_up(port=port, placement=RedisPlacement(redis_url), workers=1, timeout=WAIT_S * 3)
        yield {"port": port}
    finally:
        procs.stop()
        clear_placement(redis_url)


async def _walk(player: Player, seconds: float, seq0: int) -> int:
    """Hold a new key set every ~0.7 s (each change cuts the frames made ahead)."""
    seq, loop = seq0, asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        seq += 1
        await player.send({"type": "input", "seq": seq, "keys": WALKS[seq % len(WALKS)]})
        await asyncio.sleep(0.7)
    return seq


def _received(player: Player) -> dict[int, bytes]:
    frames = {}
    while not player.frames.empty():
        (_, _, number, _), jpeg = player.frames.get_nowait()
        frames[number] = jpeg
    return frames


@pytest.mark.timeout(PLAY_S + 420)
async def test_a_two_minute_shared_run_replays_exports_and_forks(stack):
    port = stack["port"]
    host = await _sync(make_user, "recorder")
    world = await _sync(
        make_world,
        creator=host,
        category=Category.STORIES,
        prompt="a sunny meadow with a pond",
        story_opening="The two of you wake in a meadow.",
    )
    token = await _sync(lambda: Token.objects.create(user=host).key)
    auth = {"Authorization": f"Token {token}"}
    base = origin = f"http://127.0.0.1:{port}"
    http = httpx.AsyncClient(base_url=base, timeout=WAIT_S * 3, headers=auth)
    guest = httpx.AsyncClient(base_url=base, timeout=WAIT_S)
    created = await http.post("/api/sessions/", json={"world": world.slug, "shared": True})
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    assert (await guest.post(f"/api/sessions/{sid}/join/", json={"name": "Bea"})).status_code == 201
    cookies = [await _sync(_session_cookie, host), guest.cookies["sessionid"]]
    sockets = [await _connect(f"ws://127.0.0.1:{port}/ws/play/{sid}/", origin, c) for c in cookies]
    players = [Player(s) for s in sockets]
    got: list[dict[int, bytes]] = [{}, {}]
    try:
        await players[0].frame()
        await players[1].frame()
        walking = [
            asyncio.create_task(_walk(p, PLAY_S / 2, 100 * i)) for i, p in enumerate(players)
        ]
        await players[1].send({"type": "prompt", "seq": 7, "text": "it starts to snow"})
        assert (await players[0].json(_is("event", seq=7)))["status"] == "applied"
        offer = await players[0].json(lambda b: _is("choices")(b) and len(b["options"]) == 2)
        for client in players:
            await client.send({"type": "choose", "choice_id": offer["choice_id"], "option": 0})
        await players[0].json(lambda b: _is("choices")(b) and b.get("picked"), timeout=WAIT_S * 2)
        await asyncio.gather(*walking)
        walking = [
            asyncio.create_task(_walk(p, PLAY_S / 2, 500 + 100 * i)) for i, p in enumerate(players)
        ]
        await asyncio.gather(*walking)
        for mine, player in zip(got, players, strict=True):
            mine.update(_received(player))
        await http.delete(f"/api/sessions/{sid}/")  # the host leaves, then the last player
        ended = await guest.delete(f"/api/sessions/{sid}/")
        assert ended.json()["status"] == "ended"
    finally:
        for client, socket in zip(players, sockets, strict=True):
            client.task.cancel()
            await socket.close()
        await guest.aclose()

    # The worker writes the last part as the session ends; the API reads what it adds up to.
    for _ in range(100):
        shown = await http.get(f"/api/sessions/{sid}/recording/")
        if shown.status_code == 200 and shown.json()["complete"]:
            break
        await asyncio.sleep(0.2)
    body = shown.json()
    assert body["complete"] and body["public"] is False and body["weights_match"]
    assert [p["name"] for p in body["players"]] == ["recorder", "Bea"]
    assert body["duration_s"] >= PLAY_S * 0.8
    assert {m["kind"] for m in body["marks"]} >= {"event", "pick"}
    # the guest, a player of it, sees it too; someone else does not (it is private)
    assert (
        await httpx.AsyncClient(base_url=base).get(f"/api/recordings/{body['id']}/")
    ).status_code == 404

    # Replayed here, on the same weights: every frame each player got, byte for byte.
    parts = await _sync(StorageWorldStore().load_all, f"recordings/{sid}")
    recording = rec.read_recording(parts)
    engine = WorldEngine.load()
    engine.generate = False
    for slot, frames in enumerate(got):
        again = [jpeg(f, 80) for f in rec.Replay(engine, recording).frames(slot)]
        assert len(again) == body["cameras"][str(slot)] >= PLAY_S * 10
        assert len(frames) >= 0.9 * len(again), "the client got most frames"
        wrong = [n for n, jpeg in frames.items() if n >= len(again) or again[n] != jpeg]
        assert not wrong, f"camera {slot}: {len(wrong)} of {len(frames)} frames differ"

    # Export: an MP4 per camera, with its frames and the world in its metadata.
    started = await http.post(f"/api/recordings/{body['id']}/export/")
    assert started.status_code == 202, started.text
    for _ in range(300):
        body = (await http.get(f"/api/recordings/{body['id']}/")).json()
        if body["video_status"] in ("ready", "failed"):
            break
        await asyncio.sleep(0.5)
    assert body["video_status"] == "ready" and body["video_progress"] == 100
    again = await http.post(f"/api/recordings/{body['id']}/export/")
    assert again.status_code == 202 and again.json()["video_status"] == "ready"
    video = (await httpx.AsyncClient().get(body["video_url"])).content
    with av.open(io.BytesIO(video)) as box:
        frames = sum(1 for _ in box.decode(video=0))
        meta = box.metadata
    assert frames == body["cameras"]["0"]
    assert world.title in meta.get(
        "title", ""
    ) and f"seed {world.current_version.seed}" in meta.get("comment", "")

    # Fork from the middle: a new session whose first frame is the world as it was there.
    middle = body["cameras"]["0"] // 2
    assert (
        await http.post(f"/api/recordings/{body['id']}/fork/", json={"frame": 10**6})
    ).status_code == 400
    forked = await http.post(
        f"/api/recordings/{body['id']}/fork/", json={"frame": middle, "slot": 0}
    )
    assert forked.status_code == 201, forked.text
    fork_id = forked.json()["id"]
    assert fork_id != sid
    socket = await _connect(f"ws://127.0.0.1:{port}/ws/play/{fork_id}/", origin, cookies[0])
    player = Player(socket)
    try:
        (_, _, number, _), first = await player.frame(timeout=WAIT_S * 3)
        assert (await http.delete(f"/api/sessions/{fork_id}/")).json()["status"] == "ended"
    finally:
        player.task.cancel()
        await socket.close()
    for _ in range(100):
        shown = await http.get(f"/api/sessions/{fork_id}/recording/")
        if shown.status_code == 200 and shown.json()["complete"]:
            break
        await asyncio.sleep(0.2)
    await http.aclose()
    # The fork is recorded too: its world starts as the run's was at that frame (the forked
    # player's avatar where it stood, as the fork's first player), and it drew what it sent.
    there, avatar, _ = rec.Replay(engine, recording).state_at(middle, 0)
    forked = rec.read_recording(await _sync(StorageWorldStore().load_all, f"recordings/{fork_id}"))
    began = state_from_bytes(base64.b64decode(forked.entries[0][1]))
    there = state_from_bytes(there)
    assert (began.t, began.weather, began.minute, began.spawned) == (
        there.t,
        there.weather,
        there.minute,
        there.spawned,
    )
    assert [c.__dict__ for c in began.creatures] == [c.__dict__ for c in there.creatures]
    assert [o.__dict__ for o in began.objects] == [o.__dict__ for o in there.objects]
    assert sorted(began.chunks) == sorted(there.chunks)
    assert all((began.chunks[k] == there.chunks[k]).all() for k in there.chunks)
    (was,) = [p for p in there.players if p.player_id == avatar]
    assert [(p.slot, p.x, p.y) for p in began.players] == [(0, was.x, was.y)]
    drawn = next(iter(rec.Replay(engine, forked).frames(0)))
    assert number == 0 and jpeg(drawn, 80) == first
