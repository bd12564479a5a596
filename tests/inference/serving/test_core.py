"""The batching loop on the real engine: plan -> step -> outputs returned to the caller, with no
channel layer, placement or event loop involved."""

import pytest
import simplejpeg

from inference.serving.core import EngineCore
from inference.serving.frames import decode_header, frame_jpeg
from inference.serving.messages import Event
from inference.serving.session import Camera, LiveSession, SessionStatus
from inference.world import spec


@pytest.fixture
def core(engine):
    core = EngineCore(engine, fps=24.0)
    yield core
    for session in list(core.sessions.values()):
        if session.world_id:
            core.drop_world(session.world_id)


def _live(core: EngineCore, session_id: str, now: float = 0.0, players: int = 1) -> LiveSession:
    session = LiveSession(session_id=session_id, prompt="a sunny meadow with a pond", seed=5)
    for slot in range(players):
        session.cameras[slot] = Camera(session_id, slot, name=f"P{slot}", joined=slot)
    core.sessions[session_id] = session
    core.create_world(session)
    core.go_live(session, now)
    return session


def _cam(session: LiveSession, slot: int = 0) -> Camera:
    return session.cameras[slot]


def _step(core: EngineCore, now: float):
    batch = core.schedule()
    assert batch is not None
    return core.collect(batch, core.execute(batch), now, took=0.01)


def test_no_live_session_plans_no_step(core):
    assert core.schedule() is None
    session = _live(core, "paused")
    _cam(session).status = SessionStatus.PAUSED
    assert core.schedule() is None


def test_new_keys_are_answered_by_a_frame_the_step_returns(core):
    session = _live(core, "s1")
    _cam(session).keys, _cam(session).keys_seq = frozenset({"d"}), 5
    outputs = _step(core, now=1.0)
    ((camera, data),) = outputs.frames
    version, _, frame_no, seq = decode_header(data)
    assert (camera.session_id, version, frame_no, seq) == ("s1", 1, 0, 5)
    image = simplejpeg.decode_jpeg(frame_jpeg(data), colorspace="RGB")
    assert image.shape == (192, 192, 3)
    assert (outputs.events, outputs.failed) == ([], [])


def test_text_events_come_back_as_answers(core):
    session = _live(core, "s1")
    _cam(session).events.extend([(7, "it starts to snow"), (8, "x" * 600)])
    outputs = _step(core, now=1.0)
    assert outputs.events[0] == (
        "s1",
        Event(seq=7, status="applied", by="P0", slot=0, text="it starts to snow"),
    )
    # text the engine refuses is the sender's error, not a "rejected" event (moderation's word)
    error = outputs.events[1][1]
    assert (error.code, error.seq, error.slot) == ("event_failed", 8, 0)
    assert "longer" in error.message
    assert _cam(session).state_seq == 7 and not _cam(session).events


def test_the_last_answers_to_world_events_travel_in_the_snapshot_and_junk_is_dropped():
    from inference.serving import snapshot

    session = LiveSession(session_id="s1", prompt="a meadow", seed=5)
    answers = [Event(seq=n, status="applied", by="P0", text=f"e{n}") for n in range(20)]
    session.recent_events.extend(answers)
    meta = snapshot.session_meta(session)
    meta["events"][0:0] = ["junk", 7, None]  # a snapshot is bytes from Redis: read it warily
    restored = LiveSession(session_id="s1", prompt="a meadow", seed=5)
    snapshot.apply_meta(restored, meta)
    assert list(restored.recent_events) == answers[-12:]
    snapshot.apply_meta(restored, {**meta, "events": "not a list"})
    assert not restored.recent_events


def test_text_the_model_cannot_do_is_unsupported_with_suggestions_not_rejected(core):
    session = _live(core, "s1")
    _cam(session).events.append((3, "the crowd goes wild"))
    ((_, answer),) = _step(core, now=1.0).events
    assert answer.status == "unsupported" and answer.reason
    plain = {p for by in spec.EVENT_PHRASES.values() for p in by.values()}
    assert len(answer.suggest) == 4 and set(answer.suggest) <= plain
    # a horse, which the model once lacked, now comes from the open vocabulary
    _cam(session).events.append((4, "a horse gallops by"))
    ((_, answer),) = _step(core, now=2.0).events
    assert answer.status == "applied" and not answer.suggest


def test_each_player_of_a_shared_world_gets_their_own_camera(core):
    session = _live(core, "room", players=2)
    a, b = _cam(session, 0), _cam(session, 1)
    a.keys, a.keys_seq = frozenset({"d"}), 4
    b.keys, b.keys_seq = frozenset({"w"}), 9
    frames = {camera.slot: data for camera, data in _step(core, now=1.0).frames}
    assert sorted(frames) == [0, 1]
    assert decode_header(frames[0])[3] == 4 and decode_header(frames[1])[3] == 9  # own seqs
    first = simplejpeg.decode_jpeg(frame_jpeg(frames[0]), colorspace="RGB").astype(int)
    second = simplejpeg.decode_jpeg(frame_jpeg(frames[1]), colorspace="RGB").astype(int)
    assert abs(first - second).mean() > 2  # two avatars, two places, two views
    assert len(core.engine.players(session.world_id)) == 2 and core.cameras() == 2


def test_an_event_from_one_player_reaches_everyone_in_the_world(core):
    session = _live(core, "room", players=2)
    _step(core, now=1.0)
    _cam(session, 1).events.append((5, "it starts to snow"))
    outputs = _step(core, now=1.1)
    ((sid, answer),) = outputs.events
    assert (sid, answer.status, answer.by, answer.slot) == ("room", "applied", "P1", 1)
    assert core.engine.describe(session.world_id)["weather"] == "snow"
    # The other player's view is cut too: their next step is an answer that shows it.
    assert _cam(session, 0).stepped_keys is None


def test_the_pacer_shows_a_refill_in_order_once_it_is_due(core):
    session = _live(core, "s1")
    _step(core, now=1.0)  # the first step answers at once
    _step(core, now=1.0)  # a refill: buffered, not sent
    assert _cam(session).buffered
    assert core.pace(1.0).frames == []  # not due yet: the answer just went out
    due = core.pace(1.0 + 1 / 24)
    assert [decode_header(data)[2] for _, data in due.frames] == [1]


def test_a_failing_session_is_reported_and_the_others_still_get_frames(core):
    good = _live(core, "good")
    bad = LiveSession(session_id="bad", status=SessionStatus.LIVE)
    bad.cameras[0] = Camera("bad", 0, player_id="no-such-player", joined=1)
    bad.cameras[0].status = SessionStatus.LIVE
    core.sessions["bad"] = bad
    _cam(good).keys = bad.cameras[0].keys = frozenset({"w"})
    outputs = _step(core, now=1.0)
    assert outputs.failed == ["bad"]
    assert [camera.session_id for camera, _ in outputs.frames] == ["good"]


def test_a_shared_world_keeps_one_clock_however_its_cameras_are_batched(core):
    session = _live(core, "room", players=3)
    world = core.engine.worlds[session.world_id]
    start = world.t
    # Each camera steps in a batch of its own (as key changes are answered alone): the world
    # moves on by the frames of its furthest camera, not by every camera's frames added up.
    for slot in range(3):
        batch = core.engine.step(
            {_cam(session, slot).player_id: frozenset()}, {_cam(session, slot).player_id: 2}
        )
        assert len(next(iter(batch.values()))) == 2
    assert world.t - start == 2


def test_a_kept_live_world_the_model_cannot_read_gives_way_to_a_fresh_one(core):
    session = LiveSession(session_id="live", prompt="a sunny meadow with a pond", seed=5)
    session.cameras[0] = Camera("live", 0, name="P0", joined=0)
    core.sessions["live"] = session
    core.create_world(session, kept=b"PXWS\x00\x01 a world saved by the v1 model")
    world = core.engine.worlds[session.world_id]
    assert world.prompt == "a sunny meadow with a pond" and len(world.players) == 1


@pytest.mark.parametrize(("cameras", "longest"), [(1, 16), (2, 8), (8, 2), (20, 1)])
def test_refills_are_no_longer_than_a_decoder_batch_shared_by_the_live_cameras(
    core, cameras, longest
):
    # Under load the controller's cap climbs to the engine's longest chunk; with many cameras
    # live that only buffered frames a key change threw away (half of all frames at 8).
    core.controller.cap = core.engine.max_chunk
    assert core.engine.max_chunk >= 16
    session = _live(core, "many", players=cameras)
    for camera in session.cameras.values():
        camera.stepped_keys, camera.held_frames = camera.keys, 10_000  # held keys: a refill
    batch = core.schedule()
    assert batch is not None and not batch.answers_to
    assert max(batch.plan.chunk.values()) == longest
