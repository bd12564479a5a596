"""The generation runner: a few threads, never two jobs of a session at once, sessions in
turn, a bounded queue, deadlines."""

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


def test_it_runs_several_sessions_at_once_but_never_two_jobs_of_one_session():
    runner = GenerationRunner(per_session=3, max_jobs=10, concurrency=3)
    lock = threading.Lock()
    running: dict[str, int] = {}
    most = {"all": 0, "per_session": 0}
    started = {name: threading.Event() for name in ("a1", "a2", "b1", "c1")}
    gate = threading.Event()

    def job(session, name):
        def run(deadline):
            with lock:
                running[session] = running.get(session, 0) + 1
                most["all"] = max(most["all"], sum(running.values()))
                most["per_session"] = max(most["per_session"], running[session])
            started[name].set()
            gate.wait(10)
            with lock:
                running[session] -= 1
            return name

        return run

    futures = [runner.submit(s, job(s, n), timeout_s=10)
               for s, n in [("a", "a1"), ("a", "a2"), ("b", "b1"), ("c", "c1")]]  # fmt: skip
    try:
        for name in ("a1", "b1", "c1"):  # three threads, three sessions: all at once
            assert started[name].wait(10), name
        assert not started["a2"].is_set()  # a's second job waits for its first
        gate.set()
        assert [f.result(10) for f in futures] == ["a1", "a2", "b1", "c1"]
    finally:
        gate.set()
        runner.close()
    assert most == {"all": 3, "per_session": 1}


def test_a_job_failing_on_one_thread_leaves_the_others_running():
    runner = GenerationRunner(concurrency=2)
    gate = threading.Event()

    def slow(deadline):
        gate.wait(10)
        return "done"

    def boom(deadline):
        raise RuntimeError("model crashed")

    try:
        slow_one = runner.submit("a", slow, timeout_s=10)
        failed = runner.submit("b", boom, timeout_s=10)
        with pytest.raises(RuntimeError):
            failed.result(10)
        after = runner.submit("b", lambda d: "fine", timeout_s=10)
        assert after.result(10) == "fine"  # while a's job still holds the other thread
        assert not slow_one.done()
        gate.set()
        assert slow_one.result(10) == "done"
    finally:
        gate.set()
        runner.close()


def test_concurrency_must_be_positive():
    with pytest.raises(ValueError):
        GenerationRunner(concurrency=0)
