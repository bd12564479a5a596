"""The generation runner: one thread, sessions in turn, a bounded queue, deadlines."""

import threading
import time

import pytest

from inference.narrative.runner import GenerationRunner, QueueFull


@pytest.fixture
def runner():
    runner = GenerationRunner(per_session=3, max_jobs=6)
    yield runner
    runner.close()


def blocker(runner, session_id="gate"):
    """A job that holds the thread until released: what queues meanwhile is ordered by policy."""
    gate = threading.Event()
    started = threading.Event()

    def job(deadline):
        started.set()
        gate.wait(10)

    future = runner.submit(session_id, job, timeout_s=10)
    assert started.wait(10)
    return gate, future


def test_sessions_take_turns_whatever_order_their_jobs_came_in(runner):
    gate, _ = blocker(runner)
    order = []
    futures = [
        runner.submit(sid, lambda d, sid=sid, n=n: order.append(f"{sid}{n}"), timeout_s=10)
        for sid, n in [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("c", 1), ("b", 2)]
    ]
    gate.set()
    for future in futures:
        future.result(10)
    assert order == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_a_session_with_too_many_waiting_jobs_is_refused_at_once(runner):
    gate, _ = blocker(runner)
    for _ in range(3):
        runner.submit("a", lambda d: None, timeout_s=10)
    with pytest.raises(QueueFull):
        runner.submit("a", lambda d: None, timeout_s=10)
    runner.submit("b", lambda d: None, timeout_s=10)  # others still get in
    gate.set()


def test_the_whole_queue_is_bounded(runner):
    gate, _ = blocker(runner)
    for i in range(6):
        runner.submit(f"s{i}", lambda d: None, timeout_s=10)
    with pytest.raises(QueueFull):
        runner.submit("late", lambda d: None, timeout_s=10)
    gate.set()


def test_a_job_gets_its_deadline_and_one_that_waited_past_it_still_answers(runner):
    gate, _ = blocker(runner)
    late = runner.submit("a", lambda deadline: deadline < time.monotonic(), timeout_s=0.01)
    time.sleep(0.05)
    gate.set()
    assert late.result(10) is True  # it ran knowing its deadline had passed
    assert runner.expired == 1


def test_a_failing_job_fails_its_future_and_the_runner_goes_on(runner):
    def boom(deadline):
        raise RuntimeError("model crashed")

    failed = runner.submit("a", boom, timeout_s=10)
    after = runner.submit("a", lambda d: "fine", timeout_s=10)
    with pytest.raises(RuntimeError, match="model crashed"):
        failed.result(10)
    assert after.result(10) == "fine"


def test_dropping_a_session_cancels_its_waiting_jobs_only(runner):
    gate, _ = blocker(runner)
    mine = runner.submit("a", lambda d: "a", timeout_s=10)
    theirs = runner.submit("b", lambda d: "b", timeout_s=10)
    runner.drop("a")
    gate.set()
    assert mine.cancelled()
    assert theirs.result(10) == "b"
    assert runner.waiting() == 0
