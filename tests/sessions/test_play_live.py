"""The consumers with a real inference worker (the real world model, in this event loop) on the
real Redis channel layer and placement: frames, the echoed input seq, spectators, and a
reconnect that resumes the same world."""

import asyncio
import json

import pytest
import simplejpeg
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from rest_framework.test import APIClient

from inference.serving.frames import HEADER_SIZE, decode_header
from inference.world.engine import WorldEngine
from sessions import seats
from sessions.models import PlaySession, SessionStatus
from tests.inference.serving.worker_support import running_worker
from tests.sessions.play_fixtures import make_user, make_world
from tests.sessions.test_consumers import WAIT, _cookie_for, _socket, _status

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]


@pytest.fixture
async def worker(clean_placement, engine):
    async with running_worker(
        layer=get_channel_layer(), placement=clean_placement, engine=engine, capacity=2
    ) as worker:
        yield worker


@sync_to_async
def _placed_session(public: bool = True):
    user = make_user()
    session, _ = seats.session_create(
        world_slug=make_world().slug,
        user=user,
        session_key="",
        client_ip="10.4.4.4",
        is_public=public,
    )
    return session, _cookie_for(user)


async def _frames(socket, count: int) -> list[tuple[tuple, bytes]]:
    frames = []
    while len(frames) < count:
        output = await socket.receive_output(WAIT)
        assert output["type"] == "websocket.send", output
        if output.get("bytes") is not None:
            frames.append((decode_header(output["bytes"]), output["bytes"][HEADER_SIZE:]))
    return frames


async def test_the_player_gets_live_frames_that_echo_their_input(worker):
    session, key = await _placed_session()
    socket = _socket(f"/ws/play/{session.id}/", key)
    assert (await socket.connect(WAIT))[0]
    await _status(socket, "live")
    first = await _frames(socket, 5)
    await socket.send_to(text_data=json.dumps({"type": "input", "seq": 7, "keys": ["d"]}))
    echoed = None
    for _ in range(200):
        (version, _, frame_no, seq), jpeg = (await _frames(socket, 1))[0]
        if seq == 7:
            echoed = (version, frame_no, jpeg)
            break
    await socket.disconnect()
    assert all(header[0] == 1 for header, _ in first)
    assert all(jpeg[:2] == b"\xff\xd8" for _, jpeg in first)  # JPEG start-of-image
    assert echoed is not None and echoed[1] > first[-1][0][2]
    row = await sync_to_async(PlaySession.objects.get)(pk=session.id)
    assert row.status == SessionStatus.LIVE and row.worker_name == worker.name


async def test_a_spectator_sees_the_same_stream(worker):
    session, key = await _placed_session()
    player = _socket(f"/ws/play/{session.id}/", key)
    assert (await player.connect(WAIT))[0]
    await _status(player, "live")
    watcher = _socket(f"/ws/watch/{session.id}/")
    assert (await watcher.connect(WAIT))[0]
    watched = await _frames(watcher, 3)
    await watcher.disconnect()
    await player.disconnect()
    assert len(watched) == 3
    assert watched[0][0][2] < watched[-1][0][2]  # frame numbers advance


async def test_reconnecting_resumes_the_same_world_where_it_was(worker):
    session, key = await _placed_session()
    socket = _socket(f"/ws/play/{session.id}/", key)
    assert (await socket.connect(WAIT))[0]
    await _status(socket, "live")
    before = await _frames(socket, 10)
    await socket.disconnect()
    again = _socket(f"/ws/play/{session.id}/", key)
    assert (await again.connect(WAIT))[0]
    after = await _frames(again, 3)
    await again.disconnect()
    # The worker kept the world: numbering goes on instead of a new world starting at 0.
    assert after[0][0][2] > before[-1][0][2]
    assert len(worker.sessions) == 1


async def test_a_world_event_is_screened_applied_and_answered(worker):
    session, key = await _placed_session()
    socket = _socket(f"/ws/play/{session.id}/", key)
    assert (await socket.connect(WAIT))[0]
    await _status(socket, "live")
    text = "night falls and it starts to snow"
    await socket.send_to(text_data=json.dumps({"type": "prompt", "seq": 11, "text": text}))
    # The first screening loads the text encoder: allow it time on a busy machine.
    while True:
        output = await socket.receive_output(120)
        if output.get("text") and json.loads(output["text"])["type"] == "event":
            event = json.loads(output["text"])
            break
    await socket.disconnect()
    assert (event["seq"], event["status"], event["reason"], event["you"]) == (
        11,
        "applied",
        None,
        True,
    )


def _live_ids_and_pictures() -> tuple[list[str], list[tuple[int, str, bytes]]]:
    """The ids /api/live/ lists, and what each card's thumbnail URL answers."""
    client = APIClient()
    rows = client.get("/api/live/").json()["results"]
    pictures = [client.get(row["thumbnail_url"]) for row in rows]
    return [row["id"] for row in rows], [
        (p.status_code, p.get("Content-Type", ""), p.content) for p in pictures
    ]


async def test_a_session_on_the_live_listing_has_a_thumbnail_from_its_first_frame(
    clean_placement, engine
):
    # It was listed as soon as it was placed, and its thumbnail came with the first snapshot
    # seconds later: a card whose picture answered 404 meanwhile. Snapshots here are an hour
    # apart, so the thumbnail can only come with the first frame.
    async with running_worker(
        layer=get_channel_layer(),
        placement=clean_placement,
        engine=engine,
        capacity=2,
        snapshot_every_s=3600,
    ):
        session, key = await _placed_session()
        before, _ = await sync_to_async(_live_ids_and_pictures)()
        socket = _socket(f"/ws/play/{session.id}/", key)
        assert (await socket.connect(WAIT))[0]
        [(_, frame)] = await _frames(socket, 1)
        pictures = []
        for _ in range(50):  # the frame and the thumbnail leave the worker together
            ids, pictures = await sync_to_async(_live_ids_and_pictures)()
            if ids:
                break
            await asyncio.sleep(0.1)
        await socket.disconnect()
    assert str(session.id) not in before  # placed, playing, but no picture yet
    assert ids == [str(session.id)], "listed once its first frame was sent"
    [(code, content_type, jpeg)] = pictures
    assert (code, content_type) == (200, "image/jpeg")
    assert simplejpeg.decode_jpeg(jpeg).shape == simplejpeg.decode_jpeg(frame).shape  # a frame


@pytest.fixture(scope="module")
def second_engine():
    return WorldEngine.load("cpu")


async def test_after_a_worker_dies_inputs_follow_the_session_to_its_new_worker(
    clean_placement, engine, second_engine
):
    layer = get_channel_layer()
    async with running_worker(
        layer=layer, placement=clean_placement, engine=engine, capacity=2, snapshot_every_s=0.5
    ) as first:
        session, key = await _placed_session()
        socket = _socket(f"/ws/play/{session.id}/", key)
        assert (await socket.connect(WAIT))[0]
        await _status(socket, "live")
        await _frames(socket, 24)  # long enough for a snapshot
        async with running_worker(
            layer=layer, placement=clean_placement, engine=second_engine, capacity=2
        ) as second:
            await first.abandon()  # as kill -9: no handover, the heartbeat just stops
            await _status(socket, "resuming")
            echoed = False
            for i in range(400):
                if i % 12 == 0:  # held keys are re-sent, as the browser does every 250 ms: one
                    # sent while the new worker is still restoring the world is not lost for good
                    await socket.send_to(
                        text_data=json.dumps({"type": "input", "seq": 50, "keys": []})
                    )
                (_, _, _, seq), _ = (await _frames(socket, 1))[0]
                if seq == 50:
                    echoed = True
                    break
            await socket.disconnect()
            row = await sync_to_async(PlaySession.objects.get)(pk=session.id)
    assert echoed
    assert row.worker_name == second.name
    assert row.is_active
