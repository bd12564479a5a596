"""The batching loop on the real engine: plan -> step -> outputs returned to the caller, with no
channel layer, placement or event loop involved."""

import pytest
import simplejpeg

from inference.serving.core import EngineCore
from inference.serving.frames import decode_header, frame_jpeg
from inference.serving.messages import Event
from inference.serving.session import LiveSession, SessionStatus


@pytest.fixture
def core(engine):
    core = EngineCore(engine, fps=24.0)
    yield core
    for session in list(core.sessions.values()):
        if session.world_id:
            core.drop_world(session.world_id)


def _live(core: EngineCore, session_id: str, now: float = 0.0) -> LiveSession:
    session = LiveSession(session_id=session_id, prompt="a sunny meadow with a pond", seed=5)
    core.sessions[session_id] = session
    core.create_world(session)
    core.go_live(session, now)
    return session


def _step(core: EngineCore, now: float):
    batch = core.schedule()
    assert batch is not None
    return core.collect(batch, core.execute(batch), now, took=0.01)


def test_no_live_session_plans_no_step(core):
    assert core.schedule() is None
    session = _live(core, "paused")
    session.status = SessionStatus.PAUSED
    assert core.schedule() is None


def test_new_keys_are_answered_by_a_frame_the_step_returns(core):
    session = _live(core, "s1")
    session.keys, session.keys_seq = frozenset({"d"}), 5
    outputs = _step(core, now=1.0)
    ((session_id, data),) = outputs.frames
    version, _, frame_no, seq = decode_header(data)
    assert (session_id, version, frame_no, seq) == ("s1", 1, 0, 5)
    image = simplejpeg.decode_jpeg(frame_jpeg(data), colorspace="RGB")
    assert image.shape[2] == 3 and image.shape[0] == image.shape[1] >= 64
    assert (outputs.events, outputs.failed) == ([], [])


def test_text_events_come_back_as_answers(core):
    session = _live(core, "s1")
    session.events.extend([(7, "it starts to snow"), (8, "x" * 600)])
    outputs = _step(core, now=1.0)
    assert outputs.events[0] == ("s1", Event(seq=7, status="applied"))
    assert outputs.events[1][1].status == "rejected" and "longer" in outputs.events[1][1].reason
    assert session.state_seq == 7 and not session.events


def test_the_pacer_shows_a_refill_in_order_once_it_is_due(core):
    session = _live(core, "s1")
    _step(core, now=1.0)  # the first step answers at once
    _step(core, now=1.0)  # a refill: buffered, not sent
    assert session.buffered
    assert core.pace(1.0).frames == []  # not due yet: the answer just went out
    due = core.pace(1.0 + 1 / 24)
    assert [decode_header(data)[2] for _, data in due.frames] == [1]


def test_a_failing_session_is_reported_and_the_others_still_get_frames(core):
    good = _live(core, "good")
    bad = LiveSession(session_id="bad", player_id="no-such-player", joined=1)
    bad.status = SessionStatus.LIVE
    core.sessions["bad"] = bad
    good.keys = bad.keys = frozenset({"w"})
    outputs = _step(core, now=1.0)
    assert outputs.failed == ["bad"]
    assert [sid for sid, _ in outputs.frames] == ["good"]
