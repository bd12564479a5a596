"""The per-tick plan: dynamic chunks, cuts on change, FCFS batches, and the load controller."""

from inference.serving.scheduler import ChunkController, chunk_length, plan_step
from inference.serving.session import Camera, SessionStatus

W = frozenset({"w"})
D = frozenset({"d"})


def live(pid: str, joined: int, **fields) -> Camera:
    """A live camera (one seated player); the plan names cameras by player id."""
    fields.setdefault("held_frames", 100)  # keys held long: steady chunks reach the cap
    camera = Camera(session_id=f"s-{pid}", slot=0, player_id=pid, joined=joined, **fields)
    camera.status = SessionStatus.LIVE
    return camera


def test_chunks_grow_to_the_cap_while_keys_stay_the_same():
    assert chunk_length(W, W, False, 4) == 4
    assert chunk_length(W, D, False, 4) == 1
    assert chunk_length(W, W, True, 4) == 1
    assert chunk_length(None, W, False, 4) == 1
    assert chunk_length(W, W, False, 0) == 1


def test_a_steady_chunk_grows_with_how_long_the_keys_are_held():
    assert [chunk_length(W, W, False, 16, 1, held) for held in (1, 2, 4, 8, 16, 40)] == [
        1,
        2,
        4,
        8,
        16,
        16,
    ]


def test_under_load_an_answer_is_long_enough_to_bridge_the_next_step():
    assert chunk_length(W, D, False, 8, cover=3) == 3
    assert chunk_length(W, W, False, 2, cover=3) == 3


def test_a_session_with_enough_buffered_frames_and_same_keys_waits():
    session = live("a", 1, keys=W, stepped_keys=W)
    session.buffered.extend([b"f"] * 5)
    plan = plan_step([session], cap=4, cover=2)
    assert plan.stepping == () and plan.frames == 0


def test_a_low_buffer_is_refilled_with_a_full_chunk():
    session = live("a", 1, keys=W, stepped_keys=W)
    session.buffered.extend([b"f1", b"f2"])
    plan = plan_step([session], cap=4, cover=2)
    assert plan.stepping == ("a",) and plan.cut == ()
    assert plan.chunk == {"a": 4}


def test_a_new_key_set_cuts_the_chunk_at_once():
    session = live("a", 1, keys=D, stepped_keys=W)
    session.buffered.extend([b"f1", b"f2", b"f3"])
    plan = plan_step([session], cap=4)
    assert plan.cut == ("a",)
    assert plan.chunk == {"a": 1}
    assert plan.keys == {"a": D}


def test_a_text_event_cuts_the_chunk_too():
    session = live("a", 1, keys=W, stepped_keys=W)
    session.buffered.extend([b"f1", b"f2", b"f3"])
    session.events.append((7, "it starts to snow"))
    plan = plan_step([session], cap=8)
    assert plan.stepping == ("a",) and plan.cut == ("a",) and plan.chunk == {"a": 1}


def test_chunks_never_pass_the_engines_cap():
    session = live("a", 1, keys=W, stepped_keys=W)
    plan = plan_step([session], cap=4, cover=40, max_chunk=16)
    assert plan.chunk == {"a": 16}


def test_steady_sessions_step_with_the_cap_and_paused_ones_not_at_all():
    steady = live("a", 1, keys=W, stepped_keys=W)
    paused = live("b", 2, keys=W, stepped_keys=W)
    paused.status = SessionStatus.PAUSED
    plan = plan_step([steady, paused], cap=3)
    assert plan.stepping == ("a",)
    assert plan.chunk == {"a": 3}


def test_answers_step_alone_in_short_chunks_with_only_the_starving():
    answer = live("answer", 2, keys=D, stepped_keys=W)
    answer.buffered.extend([b"f"] * 6)
    low = live("low", 1, keys=W, stepped_keys=W)
    low.buffered.append(b"f")
    starving = live("starving", 3, keys=W, stepped_keys=W)
    plan = plan_step([answer, low, starving], cap=8, cover=2)
    assert plan.stepping == ("answer", "starving")
    assert plan.chunk == {"answer": 1, "starving": 2}


def test_refills_go_emptiest_first_within_the_frame_budget():
    sessions = []
    for n, buffered in enumerate([3, 0, 2, 1]):
        session = live(f"s{n}", n, keys=W, stepped_keys=W)
        session.buffered.extend([b"f"] * buffered)
        sessions.append(session)
    plan = plan_step(sessions, cap=4, cover=2, max_frames=8)
    assert plan.stepping == ("s1", "s3")
    assert plan.waiting == ("s2", "s0")
    assert plan.frames == 8


def test_a_full_batch_serves_sessions_first_come_first_served():
    late = live("late", 3, keys=W)
    early = live("early", 1, keys=W)
    middle = live("middle", 2, keys=W)
    plan = plan_step([late, early, middle], cap=2, max_batch=2)
    assert plan.stepping == ("early", "middle")
    assert plan.waiting == ("late",)


def test_the_controller_raises_the_cap_when_ticks_run_over():
    controller = ChunkController(max_chunk=8, cooldown_ticks=4)
    for _ in range(40):
        controller.observe(busy_s=0.05, period_s=1 / 24, late=True)
    assert controller.cap == 8


def test_the_controller_lowers_the_cap_when_idle_and_stays_steady_in_between():
    controller = ChunkController(max_chunk=8, cap=8, cooldown_ticks=4)
    for _ in range(40):
        controller.observe(busy_s=0.001, period_s=1 / 24, late=False)
    assert controller.cap == 1
    steady = ChunkController(max_chunk=8, cap=4, cooldown_ticks=4)
    for _ in range(200):
        steady.observe(busy_s=0.5 / 24, period_s=1 / 24, late=False)
    assert steady.cap == 4
