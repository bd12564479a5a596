"""The inference worker in this test's event loop, on the real Redis pub/sub channel layer and
Redis placement, stepping the real world-model engine."""

import asyncio
import uuid

import pytest
import torch

from inference.serving import messages as m
from inference.serving.config import WorkerConfig
from inference.serving.frames import FLAG_RESTORED
from inference.serving.session import Camera
from inference.serving.snapshot import unpack_snapshot
from inference.serving.worker import MAX_EVENTS_QUEUED
from tests.inference.serving.worker_support import (
    GroupListener,
    attach_message,
    pixels,
    running_worker,
    send,
)


async def start_session(layer, placement, worker, listener_session=None):
    session_id = listener_session or str(uuid.uuid4())
    assert placement.reserve_slot(session_id) == worker.name
    return session_id


async def test_it_registers_only_once_listening(worker, placement):
    (info,) = placement.live_workers()
    assert info["name"] == worker.name and info["capacity"] == 2


async def test_it_runs_torch_on_the_threads_it_was_given(layer, placement, engine):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        async with running_worker(layer=layer, placement=placement, engine=engine, threads=1):
            assert torch.get_num_threads() == 1  # the frames' ops are too small for two
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="threads"):
        WorkerConfig(name="w", threads=0)


async def test_it_streams_numbered_jpeg_frames_to_the_session_group(
    worker, layer, placement, engine
):
    session_id = await start_session(layer, placement, worker)
    async with GroupListener(layer, session_id) as listener:
        await send(layer, worker, attach_message(session_id))
        await listener.status("starting")
        await listener.status("live")
        frames = await listener.frames(12)
    numbers = [header[2] for header, _ in frames]
    assert numbers == list(range(numbers[0], numbers[0] + 12))
    assert all(header[0] == 1 for header, _ in frames)
    assert pixels(frames[0][1]).shape == (engine.frame_size, engine.frame_size, 3)


async def test_it_echoes_the_last_applied_input_seq(worker, layer, placement):
    session_id = await start_session(layer, placement, worker)
    async with GroupListener(layer, session_id) as listener:
        await send(layer, worker, attach_message(session_id))
        await listener.frames(2)
        await send(
            layer,
            worker,
            {"type": "session.input", "session_id": session_id, "seq": 41, "keys": ["d"]},
        )
        header = None
        while header is None or header[3] != 41:
            ((header, _),) = await listener.frames(1)
        # An older input arriving late never rolls the echo back.
        await send(
            layer,
            worker,
            {"type": "session.input", "session_id": session_id, "seq": 40, "keys": []},
        )
        later = await listener.frames(5)
    assert all(h[3] == 41 for h, _ in later)


async def test_a_world_event_is_answered_applied_and_a_bad_one_refused(worker, layer, placement):
    session_id = await start_session(layer, placement, worker)
    async with GroupListener(layer, session_id) as listener:
        await send(layer, worker, attach_message(session_id))
        await listener.status("live")
        await send(
            layer,
            worker,
            {
                "type": "session.prompt",
                "session_id": session_id,
                "seq": 3,
                "text": "night falls and it starts to snow",
            },
        )
        applied = await listener.next(lambda m: m["type"] == "session.event")
        await send(
            layer,
            worker,
            {"type": "session.prompt", "session_id": session_id, "seq": 4, "text": "   "},
        )
        refused = await listener.next(lambda m: m["type"] == "session.error")
        ((header, _),) = await listener.frames(1)
    assert (applied["seq"], applied["status"], applied["reason"], applied["slot"]) == (
        3,
        "applied",
        None,
        0,
    )
    # bad text is the sender's error, not an event: "rejected" is moderation's word
    assert (refused["seq"], refused["code"], refused["slot"]) == (4, "bad_text", 0)
    assert header[3] >= 3


async def test_a_player_seated_again_is_sent_the_last_answers_to_world_events(
    worker, layer, placement
):
    # the page's events list is its own: a reload emptied it while the world kept the changes
    session_id = await start_session(layer, placement, worker)
    async with GroupListener(layer, session_id) as listener:
        await send(layer, worker, attach_message(session_id))
        await listener.status("live")
        for seq, text in ((1, "night falls"), (2, "the crowd goes wild")):
            prompt = {"type": "session.prompt", "session_id": session_id, "seq": seq, "text": text}
            await send(layer, worker, prompt)
            await listener.next(lambda m, seq=seq: m["type"] == "session.event" and m["seq"] == seq)
        await send(layer, worker, {"type": "session.detach", "session_id": session_id})
        await send(layer, worker, attach_message(session_id))
        replay = [
            await listener.next(lambda m: m["type"] == "session.event" and "history" in m)
            for _ in range(2)
        ]
        # A spectator who comes now is sent them too, on their own channel.
        spectator = await layer.new_channel()
        watch = {"type": "session.watch", "session_id": session_id, "channel": spectator}
        await send(layer, worker, watch)
        watched = [await asyncio.wait_for(layer.receive(spectator), 10) for _ in range(2)]
    said = [(m["seq"], m["text"], m["status"], m["history"], m["only_slot"]) for m in replay]
    assert said == [
        (1, "night falls", "applied", 0, 0),
        (2, "the crowd goes wild", "unsupported", 1, 0),
    ]
    seen = [(m["seq"], m["history"], m["only_slot"]) for m in watched]
    assert seen == [(1, 0, -1), (2, 1, -1)]


async def test_a_flood_of_world_events_is_the_senders_error_not_an_event(worker, layer):
    camera = Camera(session_id="s-flood", slot=2, name="P2")
    camera.events.extend((seq, "it snows") for seq in range(MAX_EVENTS_QUEUED))
    async with GroupListener(layer, "s-flood") as listener:
        worker._on_prompt(camera, m.Prompt(session_id="s-flood", seq=99, text="it rains", slot=2))
        error = await listener.next(lambda msg: msg["type"] == "session.error")
    assert (error["code"], error["seq"], error["slot"]) == ("too_many_events", 99, 2)
    assert error["message"] and len(camera.events) == MAX_EVENTS_QUEUED


async def test_malformed_messages_never_disturb_the_worker_or_other_sessions(
    worker, layer, placement
):
    session_id = await start_session(layer, placement, worker)
    async with GroupListener(layer, session_id) as listener:
        await send(layer, worker, attach_message(session_id))
        await listener.frames(2)
        for junk in [
            {"type": "session.input"},
            {"type": "session.input", "session_id": session_id, "seq": "x", "keys": "wasd"},
            {"type": "session.input", "session_id": session_id, "seq": 9, "keys": ["q", 5, None]},
            {"type": "session.prompt", "session_id": session_id, "seq": 9, "text": None},
            {"type": "session.unknown", "session_id": session_id},
            {"type": "session.end", "session_id": "not-a-session"},
            {"type": "session.attach"},
            {"type": "nonsense"},
        ]:
            await send(layer, worker, junk)
        frames = await listener.frames(10)
    assert len(frames) == 10
    assert worker.sessions[session_id].cameras[0].keys == frozenset()


async def test_a_bad_world_spec_ends_only_that_session(worker, layer, placement):
    good, bad = await start_session(layer, placement, worker), str(uuid.uuid4())
    placement.reserve_slot(bad)
    async with GroupListener(layer, good) as ok, GroupListener(layer, bad) as broken:
        await send(layer, worker, attach_message(good))
        await send(layer, worker, attach_message(bad, prompt=""))
        ended = await broken.status("ended")
        frames = await ok.frames(5)
    assert ended["reason"]
    assert placement.worker_of(bad) is None
    assert len(frames) == 5 and good in worker.sessions


async def test_a_full_worker_turns_an_extra_attach_away(worker, layer, placement):
    sessions = [str(uuid.uuid4()) for _ in range(3)]
    async with GroupListener(layer, sessions[2]) as third:
        for session_id in sessions:
            await send(layer, worker, attach_message(session_id))
        ended = await third.status("ended")
    assert ended["reason"] == "worker_full"
    assert set(worker.sessions) == set(sessions[:2])


async def test_detach_pauses_and_a_reattach_resumes_the_same_world(worker, layer, placement):
    session_id = await start_session(layer, placement, worker)
    async with GroupListener(layer, session_id) as listener:
        await send(layer, worker, attach_message(session_id))
        before = await listener.frames(3)
        world_id = worker.sessions[session_id].world_id
        await send(layer, worker, {"type": "session.detach", "session_id": session_id})
        camera = worker.sessions[session_id].cameras[0]
        while camera.status.value != "paused":
            await asyncio.sleep(0.05)
        paused_at = camera.frame_no
        await asyncio.sleep(0.5)
        assert camera.frame_no == paused_at
        await send(layer, worker, attach_message(session_id))
        await listener.status("live")
        ((header, _),) = await listener.frames(1, timeout=60)
        while header[2] < paused_at:  # frames sent before the pause may still be in flight
            ((header, _),) = await listener.frames(1)
    assert worker.sessions[session_id].world_id == world_id
    assert header[2] == paused_at > before[-1][0][2]


async def test_it_snapshots_each_session_to_placement(worker, layer, placement):
    session_id = await start_session(layer, placement, worker)
    async with GroupListener(layer, session_id) as listener:
        await send(layer, worker, attach_message(session_id, seed=99))
        await listener.frames(20)
    meta, world = unpack_snapshot(placement.load_snapshot(session_id))
    assert meta["session_id"] == session_id and meta["seed"] == 99
    (camera,) = meta["cameras"]
    assert camera["player_id"] == worker.sessions[session_id].cameras[0].player_id
    assert camera["slot"] == 0 and camera["frame_no"] > 0 and world


async def test_end_frees_the_slot_forgets_the_snapshot_and_counts_frames(worker, layer, placement):
    session_id = await start_session(layer, placement, worker)
    async with GroupListener(layer, session_id) as listener:
        await send(layer, worker, attach_message(session_id))
        await listener.frames(6)
        await send(
            layer,
            worker,
            {"type": "session.end", "session_id": session_id, "reason": "player_left"},
        )
        ended = await listener.status("ended")
    assert ended["reason"] == "player_left"
    assert session_id not in worker.sessions
    assert placement.worker_of(session_id) is None
    assert placement.load_snapshot(session_id) is None
    assert placement.session_frames(session_id) >= 6


async def test_a_restored_session_marks_its_first_frame(worker, layer, placement):
    session_id = await start_session(layer, placement, worker)
    async with GroupListener(layer, session_id) as listener:
        await send(layer, worker, attach_message(session_id))
        await listener.frames(3)
        snapshot = placement.load_snapshot(session_id)
        await send(
            layer, worker, {"type": "session.end", "session_id": session_id, "reason": "test"}
        )
        await listener.status("ended")
    placement.save_snapshot(session_id, snapshot)
    placement.reserve_slot(session_id)
    async with GroupListener(layer, session_id) as listener:
        await send(
            layer, worker, {"type": "session.attach", "session_id": session_id, "restore": True}
        )
        await listener.status("resuming")
        ((header, _),) = await listener.frames(1)
    assert header[1] & FLAG_RESTORED
    assert header[2] == unpack_snapshot(snapshot)[0]["cameras"][0]["frame_no"]
