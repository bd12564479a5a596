"""A socket sends the present: frames that fell behind on the way are dropped (issue 51)."""

from sessions.frame_lag import FrameLag


def test_frames_as_quick_as_the_quickest_are_sent_whatever_the_clocks_differ_by():
    lag = FrameLag(stale_s=0.5)
    # the worker's clock runs 30 s ahead of this host's: every frame looks 30 s early
    assert all(lag.fresh(sent=100.0 + t / 24 + 30, now=100.0 + t / 24 + 0.01) for t in range(48))
    assert lag.dropped == 0


def test_a_backlog_is_dropped_and_the_present_is_sent_again():
    lag = FrameLag(stale_s=0.5)
    assert lag.fresh(sent=10.0, now=10.02)
    # a burst that waited in the queue for 3 s: every one of them is stale
    backlog = [lag.fresh(sent=10.0 + i / 24, now=13.0 + i / 1000) for i in range(72)]
    assert not any(backlog[:48]) and lag.dropped >= 48
    # then frames arrive on time again
    assert lag.fresh(sent=13.5, now=13.52)


def test_unstamped_frames_are_always_sent():
    lag = FrameLag(stale_s=0.5)
    assert lag.fresh(sent=10.0, now=10.0)
    assert lag.fresh(sent=None, now=99.0)


def test_a_worker_clock_stepping_back_stops_the_frames_only_for_a_while():
    lag = FrameLag(stale_s=0.5, rebase_s=10.0)
    assert lag.fresh(sent=50.0, now=50.0)
    # the worker's clock steps back 5 s: its frames now look 5 s late
    shown = [lag.fresh(sent=45.0 + t / 24, now=50.0 + t / 24) for t in range(24 * 12)]
    assert not any(shown[: 24 * 9])  # dropped while it could be a backlog...
    assert all(shown[24 * 11 :])  # ...then the new lag is the baseline
