"""Placement: registry, atomic slot reservation, FIFO queue, failover bookkeeping, snapshots.

Every test runs against both implementations: Redis (the real server, db from REDIS_URL, a
fresh key prefix per test) and the in-memory one of the embedded default.
"""

import threading
import time
import uuid

import pytest
import redis

from inference.serving.placement import STALE_S, InMemoryPlacement, RedisPlacement


@pytest.fixture(params=["redis", "memory"])
def make_placement(request):
    """A factory: each call is one more client on the same placement state."""
    if request.param == "memory":
        shared = InMemoryPlacement()
        yield lambda: shared
        return
    url = request.getfixturevalue("redis_url")
    prefix = f"px:test:{uuid.uuid4().hex}"
    yield lambda: RedisPlacement(url, prefix=prefix)
    client = redis.Redis.from_url(url)
    for key in client.scan_iter(f"{prefix}:*"):
        client.delete(key)


@pytest.fixture
def placement(make_placement):
    return make_placement()


def test_it_places_on_the_least_loaded_live_worker(placement):
    placement.register_worker("a", device="cpu", capacity=4)
    placement.register_worker("b", device="cpu", capacity=4)
    first = placement.reserve_slot("s1")
    second = placement.reserve_slot("s2")
    assert {first, second} == {"a", "b"}
    assert placement.worker_of("s1") == first
    loads = {w["name"]: w["load"] for w in placement.live_workers()}
    assert loads == {"a": 1, "b": 1}


def test_reserving_twice_keeps_the_first_slot(placement):
    placement.register_worker("a", device="cpu", capacity=1)
    placement.register_worker("b", device="cpu", capacity=1)
    worker = placement.reserve_slot("s1")
    assert placement.reserve_slot("s1") == worker
    assert sum(w["load"] for w in placement.live_workers()) == 1


def test_it_says_none_when_every_slot_is_taken(placement):
    placement.register_worker("a", device="cpu", capacity=1)
    assert placement.reserve_slot("s1") == "a"
    assert placement.reserve_slot("s2") is None
    placement.release_slot("s1")
    assert placement.reserve_slot("s2") == "a"
    assert placement.worker_of("s1") is None


def test_concurrent_reservations_never_exceed_capacity(make_placement):
    setup = make_placement()
    setup.register_worker("a", device="cpu", capacity=3)
    setup.register_worker("b", device="cpu", capacity=2)
    setup.register_worker("c", device="cpu", capacity=2)
    results: dict[str, str | None] = {}
    barrier = threading.Barrier(12)

    def place(batch: int) -> None:
        client = make_placement()  # its own connection, like another web process
        barrier.wait()
        for i in range(10):
            sid = f"s{batch}-{i}"
            results[sid] = client.reserve_slot(sid)

    threads = [threading.Thread(target=place, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    placed = [w for w in results.values() if w is not None]
    assert len(placed) == 7
    assert placed.count("a") == 3 and placed.count("b") == 2 and placed.count("c") == 2
    assert {w["name"]: w["load"] for w in setup.live_workers()} == {"a": 3, "b": 2, "c": 2}


def test_it_skips_a_worker_whose_heartbeat_stopped(placement):
    placement.register_worker("quiet", device="cpu", capacity=4)
    placement.register_worker("alive", device="cpu", capacity=4)
    deadline = time.monotonic() + STALE_S + 0.3
    while time.monotonic() < deadline:
        assert placement.heartbeat("alive", load=0, fps=24.0)
        time.sleep(0.1)
    assert [w["name"] for w in placement.live_workers()] == ["alive"]
    assert placement.reserve_slot("s1") == "alive"
    assert placement.reserve_slot("s2") == "alive"


def test_the_queue_is_first_in_first_out_with_positions(placement):
    for sid in ("q1", "q2", "q3", "q2"):
        placement.enqueue(sid)
    assert [placement.queue_position(s) for s in ("q1", "q2", "q3")] == [1, 2, 3]
    placement.remove_from_queue("q2")
    assert placement.queue_position("q3") == 2
    assert placement.queue_position("q2") is None
    assert placement.dequeue_next() == "q1"
    placement.enqueue("q1", front=True)  # a lost reservation puts it back where it was
    placement.enqueue("q3", front=True)  # already queued: it keeps its place
    assert [placement.queue_position(s) for s in ("q1", "q3")] == [1, 2]
    assert placement.dequeue_next() == "q1"
    assert placement.dequeue_next() == "q3"
    assert placement.dequeue_next() is None


def test_reap_moves_a_dead_workers_sessions_to_a_live_worker(placement):
    placement.register_worker("doomed", device="cpu", capacity=2)
    assert placement.reserve_slot("s1") == "doomed"
    assert placement.reserve_slot("s2") == "doomed"
    placement.register_worker("survivor", device="cpu", capacity=1)
    time.sleep(STALE_S + 0.1)
    placement.heartbeat("survivor", load=0, fps=0.0)
    dead, placed = placement.reap()
    assert dead == ["doomed"]
    assert len(placed) == 1 and placed[0][1] == "survivor"
    moved = placed[0][0]
    assert placement.worker_of(moved) == "survivor"
    (waiting,) = {"s1", "s2"} - {moved}
    assert placement.orphans() == [waiting]
    assert placement.worker_of(waiting) is None
    # When a slot frees up, the next reap gives it to the orphan.
    placement.release_slot(moved)
    assert placement.reap() == ([], [(waiting, "survivor")])
    assert placement.orphans() == []


def test_a_reaped_worker_hears_it_on_its_next_heartbeat(placement):
    placement.register_worker("slow", device="cpu", capacity=1)
    placement.reserve_slot("s1")
    assert placement.reap(stale_s=0.0)[0] == ["slow"]
    assert placement.heartbeat("slow", load=1, fps=1.0) is False
    assert placement.orphans() == ["s1"]


def test_handover_drains_a_worker_and_it_takes_no_new_sessions(placement):
    placement.register_worker("leaving", device="cpu", capacity=2)
    placement.reserve_slot("s1")
    placement.reserve_slot("s2")
    placement.register_worker("staying", device="cpu", capacity=1)
    placed = placement.handover("leaving")
    assert len(placed) == 1 and placed[0][1] == "staying"
    assert len(placement.orphans()) == 1
    assert placement.sessions_of("leaving") == set()
    assert placement.reserve_slot("s3") is None  # draining: no new sessions


def test_a_restarted_worker_of_the_same_name_gives_up_its_old_sessions(placement):
    placement.register_worker("w1", device="cpu", capacity=2)
    placement.reserve_slot("s1")
    placement.register_worker("w1", device="cpu", capacity=2)
    assert placement.worker_of("s1") is None
    assert placement.orphans() == ["s1"]


def test_released_sessions_leave_the_orphans(placement):
    placement.register_worker("w1", device="cpu", capacity=1)
    placement.reserve_slot("s1")
    placement.deregister("w1")
    assert placement.orphans() == ["s1"]
    placement.release_slot("s1")
    assert placement.orphans() == []


def test_snapshots_and_frame_counters_round_trip(placement):
    data = bytes(range(256)) * 40
    placement.save_snapshot("s1", data)
    assert placement.load_snapshot("s1") == data
    placement.delete_snapshot("s1")
    assert placement.load_snapshot("s1") is None
    placement.record_frames("s1", 240)
    assert placement.session_frames("s1") == 240
    assert placement.session_frames("nobody") == 0
