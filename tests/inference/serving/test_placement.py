"""Placement: registry, atomic seat reservation, FIFO queue, failover, snapshots, thumbnails.

Every test runs against both implementations: Redis (the real server, db from REDIS_URL, a
fresh key prefix per test) and the in-memory one of the embedded default.
"""

import threading
import time
import uuid

import pytest
import redis

from inference.serving.placement import SNAPSHOT_TTL_S, STALE_S, InMemoryPlacement, RedisPlacement


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


def _loads(placement) -> dict[str, int]:
    return {w["name"]: w["load"] for w in placement.live_workers()}


def test_seats_count_toward_a_workers_load(placement):
    placement.register_worker("a", device="cpu", capacity=4)
    placement.register_worker("b", device="cpu", capacity=4)
    assert placement.reserve_slot("shared", seats=3) == "a"
    assert placement.reserve_slot("s2") == "b"
    assert placement.reserve_slot("s3") == "b"
    assert placement.reserve_slot("s4") == "b"  # b holds three sessions but only as many seats
    assert _loads(placement) == {"a": 3, "b": 3}
    assert placement.seats_of("shared") == 3


def test_a_three_seat_reservation_is_refused_by_a_worker_with_two_free(placement):
    placement.register_worker("a", device="cpu", capacity=4)
    assert placement.reserve_slot("s1", seats=2) == "a"
    assert placement.reserve_slot("trio", seats=3) is None
    assert placement.worker_of("trio") is None
    assert placement.seats_of("trio") == 0
    assert placement.reserve_slot("duo", seats=2) == "a"


def test_reserving_again_keeps_the_first_worker_and_seats(placement):
    placement.register_worker("a", device="cpu", capacity=4)
    assert placement.reserve_slot("s1") == "a"
    assert placement.reserve_slot("s1", seats=3) == "a"
    assert placement.seats_of("s1") == 1


def test_a_reservation_needs_at_least_one_seat(placement):
    placement.register_worker("a", device="cpu", capacity=4)
    with pytest.raises(ValueError):
        placement.reserve_slot("s1", seats=0)
    assert placement.worker_of("s1") is None


def test_add_seat_refuses_when_the_worker_is_full(placement):
    placement.register_worker("a", device="cpu", capacity=3)
    placement.reserve_slot("s1", seats=2)
    assert placement.add_seat("s1") is True
    assert placement.add_seat("s1") is False
    assert placement.seats_of("s1") == 3
    assert _loads(placement) == {"a": 3}
    assert placement.add_seat("nobody") is False
    assert placement.seats_of("nobody") == 0


def test_remove_seat_never_goes_below_one_while_placed(placement):
    placement.register_worker("a", device="cpu", capacity=3)
    placement.reserve_slot("s1", seats=2)
    placement.remove_seat("s1")
    placement.remove_seat("s1")
    assert placement.seats_of("s1") == 1
    assert _loads(placement) == {"a": 1}
    placement.remove_seat("nobody")
    assert placement.seats_of("nobody") == 0


def test_clients_racing_for_the_last_seat_leave_exactly_one_winner(make_placement):
    setup = make_placement()
    setup.register_worker("a", device="cpu", capacity=3)
    setup.reserve_slot("s1")
    setup.reserve_slot("s2")
    results: list[bool] = []
    barrier = threading.Barrier(6)

    def join(sid: str) -> None:
        client = make_placement()  # its own connection, like another web process
        barrier.wait()
        results.append(client.add_seat(sid))

    threads = [threading.Thread(target=join, args=(f"s{1 + n % 2}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] * 5 + [True]
    assert setup.seats_of("s1") + setup.seats_of("s2") == 3
    assert _loads(setup) == {"a": 3}


def test_reap_moves_a_three_seat_orphan_only_where_three_fit(placement):
    placement.register_worker("first", device="cpu", capacity=3)
    placement.reserve_slot("trio", seats=3)
    placement.deregister("first")
    placement.register_worker("second", device="cpu", capacity=1)
    placement.reserve_slot("solo")
    placement.deregister("second")
    assert placement.orphans() == ["trio", "solo"]
    assert placement.seats_of("trio") == 3
    placement.register_worker("tight", device="cpu", capacity=2)
    # The head does not fit, so the orphan behind it waits too (first in, first out).
    assert placement.reap() == ([], [])
    assert placement.orphans() == ["trio", "solo"]
    placement.register_worker("roomy", device="cpu", capacity=4)
    assert placement.reap() == ([], [("trio", "roomy"), ("solo", "tight")])
    assert placement.seats_of("trio") == 3
    assert _loads(placement) == {"roomy": 3, "tight": 1}


def test_handover_moves_a_three_seat_session_only_where_three_fit(placement):
    placement.register_worker("leaving", device="cpu", capacity=4)
    placement.reserve_slot("trio", seats=3)
    placement.register_worker("tight", device="cpu", capacity=2)
    placement.register_worker("roomy", device="cpu", capacity=3)
    assert placement.handover("leaving") == [("trio", "roomy")]
    assert placement.seats_of("trio") == 3
    assert _loads(placement) == {"leaving": 0, "roomy": 3, "tight": 0}


def test_a_handed_over_session_that_fits_nowhere_waits_with_its_seats(placement):
    placement.register_worker("leaving", device="cpu", capacity=3)
    placement.reserve_slot("trio", seats=3)
    placement.register_worker("tight", device="cpu", capacity=2)
    assert placement.handover("leaving") == []
    assert placement.orphans() == ["trio"]
    assert placement.seats_of("trio") == 3
    assert _loads(placement) == {"leaving": 0, "tight": 0}


def test_release_frees_all_of_a_sessions_seats(placement):
    placement.register_worker("a", device="cpu", capacity=4)
    placement.reserve_slot("s1", seats=3)
    placement.add_seat("s1")
    placement.release_slot("s1")
    assert placement.seats_of("s1") == 0
    assert _loads(placement) == {"a": 0}
    assert placement.reserve_slot("s2", seats=4) == "a"


def test_thumbnails_round_trip_apart_from_snapshots(placement):
    jpeg = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 4 + b"\xff\xd9"
    placement.save_thumbnail("s1", jpeg)
    placement.save_snapshot("s1", b"state")
    assert placement.load_thumbnail("s1") == jpeg
    placement.delete_snapshot("s1")
    assert placement.load_thumbnail("s1") == jpeg
    placement.delete_thumbnail("s1")
    assert placement.load_thumbnail("s1") is None
    assert placement.load_thumbnail("nobody") is None


def test_it_tells_which_sessions_have_a_thumbnail_in_one_call(placement):
    placement.save_thumbnail("s1", b"jpeg")
    placement.save_thumbnail("s3", b"jpeg")
    placement.save_snapshot("s2", b"state")  # a snapshot is no thumbnail
    assert placement.thumbnails_saved(["s1", "s2", "s3", "nobody"]) == {"s1", "s3"}
    placement.delete_thumbnail("s1")
    assert placement.thumbnails_saved(["s1", "s3"]) == {"s3"}
    assert placement.thumbnails_saved([]) == set()


def test_a_thumbnail_in_redis_expires_like_a_snapshot(redis_url):
    placement = RedisPlacement(redis_url, prefix=f"px:test:{uuid.uuid4().hex}")
    placement.save_thumbnail("s1", b"jpeg")
    client = redis.Redis.from_url(redis_url)
    try:
        assert 0 < client.ttl(f"{placement.prefix}:thumb:s1") <= SNAPSHOT_TTL_S
    finally:
        placement.delete_thumbnail("s1")
