"""Failover: a worker that dies (kill -9, or a crash) or shuts down (SIGTERM) loses no session.

Its sessions are re-placed on a live worker, restored from their snapshots, and the clients see
``resuming`` then frames again — from the same world the dead worker was showing.
"""

import asyncio
import os
import signal
import subprocess
import uuid

import numpy as np
import pytest

from inference.serving.frames import FLAG_RESTORED, decode_header, frame_jpeg
from inference.serving.frames import jpeg as to_jpeg
from inference.serving.placement import RedisPlacement
from inference.serving.snapshot import unpack_snapshot
from inference.world.engine import WorldEngine
from tests.inference.serving.worker_support import (
    WAIT_S,
    GroupListener,
    attach_message,
    clear_prefix,
    pixels,
    running_worker,
    send,
    unique,
)
from tests.stack import ROOT, worker_argv


@pytest.fixture(scope="module")
def engines():
    # Two workers in one process need two engines: an engine serves one worker.
    return WorldEngine.load("cpu"), WorldEngine.load("cpu")


async def _wait_for_snapshot(placement, session_id, *, seq: int, after_frame: int) -> None:
    async def poll():
        while True:
            data = placement.load_snapshot(session_id)
            if data is not None:
                meta, _ = unpack_snapshot(data)
                camera = meta["cameras"][0]
                if camera["applied_seq"] >= seq and camera["frame_no"] > after_frame:
                    return
            await asyncio.sleep(0.1)

    await asyncio.wait_for(poll(), WAIT_S)


async def _wait_for_events(placement, session_id) -> None:
    async def poll():
        while True:
            data = placement.load_snapshot(session_id)
            if data is not None and unpack_snapshot(data)[0].get("events"):
                return
            await asyncio.sleep(0.1)

    await asyncio.wait_for(poll(), WAIT_S)


async def _first_restored_frame(listener, new_worker: str):
    """The new worker's `resuming` and its first restored frame, in whichever order they come."""
    found: dict = {}

    async def scan():
        while len(found) < 2:
            message = await listener.next()
            if message["type"] == "session.status":
                if message["state"] == "resuming" and message.get("worker") == new_worker:
                    found.setdefault("resuming", message)
            elif message["type"] == "session.frame" and "frame" not in found:
                header = decode_header(message["data"])
                if header[1] & FLAG_RESTORED:
                    found["frame"] = (header, frame_jpeg(message["data"]))

    await asyncio.wait_for(scan(), WAIT_S)
    header, jpeg = found["frame"]
    return found["resuming"], header, jpeg


async def test_a_crashed_workers_session_resumes_elsewhere_with_the_same_world(
    layer, placement, engines
):
    engine_a, engine_b = engines
    session_id = str(uuid.uuid4())
    async with (
        running_worker(
            layer=layer, placement=placement, engine=engine_a, capacity=4, snapshot_every_s=0.3
        ) as doomed,
        running_worker(layer=layer, placement=placement, engine=engine_b, capacity=2) as survivor,
        GroupListener(layer, session_id) as listener,
    ):
        assert placement.reserve_slot(session_id) == doomed.name
        await send(layer, doomed, attach_message(session_id))
        await listener.frames(5)
        await send(
            layer,
            doomed,
            {"type": "session.input", "session_id": session_id, "seq": 8, "keys": ["d"]},
        )
        shown = await listener.frames(8)
        await _wait_for_snapshot(placement, session_id, seq=8, after_frame=shown[-1][0][2])
        prompt = {"type": "session.prompt", "session_id": session_id, "seq": 9, "text": "dusk"}
        await send(layer, doomed, prompt)
        await listener.next(lambda m: m["type"] == "session.event" and m["seq"] == 9)
        await _wait_for_events(placement, session_id)
        world_id = doomed.sessions[session_id].world_id
        await doomed.abandon()  # no goodbye to placement: like kill -9
        snapshot = placement.load_snapshot(session_id)
        resuming, header, jpeg = await _first_restored_frame(listener, survivor.name)
        assert placement.worker_of(session_id) == survivor.name
        more = await listener.frames(3)
        # The events list a reload or a spectator is sent survives the crash too.
        kept = list(survivor.sessions[session_id].recent_events)

    assert [(e.seq, e.text, e.status) for e in kept] == [(9, "dusk", "applied")]
    # The same snapshot restored on an engine directly gives the same next frame.
    meta, world = unpack_snapshot(snapshot)
    engine_a.drop_world(world_id)
    engine_a.restore(world)
    player = meta["cameras"][0]["player_id"]
    expected = engine_a.step({player: frozenset()}, {player: 1})[player][0]
    expected = pixels(to_jpeg(expected, 80))
    assert resuming["worker"] == survivor.name
    assert header[2] == meta["cameras"][0]["frame_no"] and header[3] == 9  # the event's seq
    assert np.abs(pixels(jpeg).astype(int) - expected.astype(int)).max() <= 2
    assert [h[2] for h, _ in more] == [header[2] + 1, header[2] + 2, header[2] + 3]


def _start_worker_process(name: str, capacity: int) -> subprocess.Popen:
    return subprocess.Popen(
        worker_argv(name, capacity=capacity),
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


async def _wait_ready(proc: subprocess.Popen, name: str) -> None:
    def read():
        for line in proc.stdout:
            if f"inference worker {name} ready" in line:
                return True
        return False

    ready = await asyncio.wait_for(asyncio.to_thread(read), WAIT_S * 2)
    assert ready, f"worker {name} exited with {proc.wait()}"
    # Keep draining its output so a full pipe never blocks it.
    asyncio.get_running_loop().run_in_executor(None, proc.stdout.read)


@pytest.fixture
def shared_placement(redis_url):
    """The default prefix, as `manage.py inference_worker` uses it (db 12 is this suite's)."""
    clear_prefix(redis_url, "px:play")
    yield RedisPlacement(redis_url)
    clear_prefix(redis_url, "px:play")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["kill -9", "SIGTERM"])
async def test_a_worker_process_that_goes_away_hands_its_session_to_a_live_worker(
    how, layer, shared_placement, engines
):
    placement = shared_placement
    name = unique("proc")
    proc = _start_worker_process(name, capacity=4)
    session_id = str(uuid.uuid4())
    try:
        await _wait_ready(proc, name)
        async with (
            running_worker(layer=layer, placement=placement, engine=engines[1], capacity=2) as live,
            GroupListener(layer, session_id) as listener,
        ):
            assert placement.reserve_slot(session_id) == name
            await send(layer, name, attach_message(session_id))
            await listener.frames(10)
            await _wait_for_snapshot(placement, session_id, seq=0, after_frame=0)
            proc.send_signal(signal.SIGKILL if how == "kill -9" else signal.SIGTERM)
            resuming, header, _ = await _first_restored_frame(listener, live.name)
            frames = await listener.frames(5)
            assert placement.worker_of(session_id) == live.name
            assert session_id in live.sessions
    finally:
        try:
            code = proc.wait(timeout=30)  # a SIGTERM'd worker exits by itself
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
    assert resuming["state"] == "resuming"
    assert len(frames) == 5 and header[1] & FLAG_RESTORED
    assert code == (-signal.SIGKILL if how == "kill -9" else 0)
