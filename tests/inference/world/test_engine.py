import numpy as np
import pytest
import torch

from inference.world import spec
from inference.world.decoder import scaled
from inference.world.engine import PromptError, SnapshotError


def test_step_returns_uint8_frames_of_the_requested_length(engine, clear_world):
    wid, pid = clear_world
    frames = engine.step({pid: frozenset("d")}, {pid: 5})[pid]
    assert frames.shape == (5, engine.frame_size, engine.frame_size, 3)
    assert frames.dtype == np.uint8


def test_every_player_of_a_call_gets_its_own_chunk_length(engine, clear_world):
    wid, pid = clear_world
    other = engine.add_player(wid)
    out = engine.step({pid: frozenset("w"), other: frozenset()}, {pid: 3, other: 1})
    assert [len(out[pid]), len(out[other])] == [3, 1]


def test_snapshot_restore_gives_the_same_continuation(engine, clear_world):
    wid, pid = clear_world
    engine.step({pid: frozenset("d")}, {pid: 4})
    snap = engine.snapshot(wid)
    first = engine.step({pid: frozenset("sd")}, {pid: 8})[pid]
    engine.restore(snap)
    again = engine.step({pid: frozenset("sd")}, {pid: 8})[pid]
    np.testing.assert_array_equal(first, again)


def test_restore_keeps_the_player_ids(engine, clear_world):
    wid, pid = clear_world
    snap = engine.snapshot(wid)
    engine.drop_world(wid)
    assert engine.restore(snap) == wid
    assert engine.players(wid) == [pid]


def test_batched_step_matches_stepping_one_world_at_a_time(engine):
    wids = [
        engine.create_world(prompt=p, seed=s)
        for p, s in (("a snowy forest at night", 5), ("a desert in the rain", 6), ("a village", 7))
    ]
    pids = [engine.add_player(w) for w in wids]
    snaps = [engine.snapshot(w) for w in wids]
    keys = {pids[0]: frozenset("d"), pids[1]: frozenset("wa"), pids[2]: frozenset()}
    chunks = {pids[0]: 6, pids[1]: 3, pids[2]: 6}
    together = engine.step(keys, chunks)
    for snap in snaps:
        engine.restore(snap)
    for pid in pids:
        alone = engine.step({pid: keys[pid]}, {pid: chunks[pid]})[pid]
        diff = np.abs(alone.astype(int) - together[pid].astype(int))
        assert diff.max() <= 1
    for w in wids:
        engine.drop_world(w)


def test_unknown_keys_are_ignored(engine, clear_world):
    wid, pid = clear_world
    snap = engine.snapshot(wid)
    plain = engine.step({pid: frozenset("d")}, {pid: 4})[pid]
    engine.restore(snap)
    noisy = engine.step({pid: frozenset({"d", "x", "shift", "ArrowUp"})}, {pid: 4})[pid]
    np.testing.assert_array_equal(plain, noisy)


def test_revisiting_a_place_shows_it_as_it_was_left(engine):
    # A closed walk (right, down, left, up) can be blocked by an obstacle: the first of a few
    # seeded worlds where it closes is the one compared.
    for seed in range(1, 21):
        wid = engine.create_world(prompt="a quiet meadow on a sunny day", seed=seed)
        world = engine.worlds[wid]
        world.weather, world.creatures = 0, []
        pid = engine.add_player(wid)
        player = world.players[0]
        start = engine.step({pid: frozenset()}, {pid: 1})[pid][-1]
        minute = world.minute
        for keys in "dsaw":
            engine.step({pid: frozenset(keys)}, {pid: 16})
        world.minute = minute  # the same place at the same light (the clock ran meanwhile)
        back = engine.step({pid: frozenset()}, {pid: 1})[pid][-1]
        closed = (player.x, player.y) == (0, 0)
        engine.drop_world(wid)
        if closed:
            break
    assert closed, "every walk was blocked"
    np.testing.assert_array_equal(start, back)


def test_a_player_sees_the_other_avatar_where_it_stands(engine, clear_world):
    wid, pid = clear_world
    alone = engine.step({pid: frozenset()}, {pid: 1})[pid][-1]
    other = engine.add_player(wid)
    a, b = engine.worlds[wid].players
    together = engine.step({pid: frozenset(), other: frozenset()}, {pid: 1, other: 1})[pid][-1]
    # drawn at 1.5x: the sprite's 12 x 12 pixels, and its shadow within 16 pixels of them
    sx, sy = (
        int(scaled(v))
        for v in (
            b.x - a.x + spec.FRAME // 2 - spec.SPRITE // 2,
            b.y - a.y + spec.FRAME // 2 - spec.SPRITE // 2,
        )
    )
    s = scaled(spec.SPRITE)
    box = (slice(sy, sy + s), slice(sx, sx + s))
    assert np.abs(together[box].astype(int) - alone[box].astype(int)).sum() > 0
    outside = np.ones(alone.shape[:2], bool)
    outside[max(0, sy - 16) : sy + s + 16, max(0, sx - 16) : sx + s + 16] = False
    np.testing.assert_array_equal(together[outside], alone[outside])


def test_a_weather_event_changes_the_running_world(engine, clear_world):
    wid, _ = clear_world
    engine.apply_event(wid, "it starts to snow")
    assert spec.WEATHERS[engine.worlds[wid].weather] == "snow"


@pytest.mark.parametrize("prompt", ["", "   ", "x" * 10_000])
def test_empty_or_huge_prompts_are_rejected_and_the_engine_keeps_working(engine, prompt):
    before = len(engine.worlds)
    with pytest.raises(PromptError):
        engine.create_world(prompt=prompt, seed=1)
    assert len(engine.worlds) == before
    wid = engine.create_world(prompt="a beach", seed=1)
    pid = engine.add_player(wid)
    assert engine.step({pid: frozenset()}, {pid: 1})[pid].shape[0] == 1
    engine.drop_world(wid)


def test_an_unrecognisable_event_is_rejected_without_changing_the_world(engine, clear_world):
    wid, _ = clear_world
    before = engine.snapshot(wid)
    with pytest.raises(PromptError):
        engine.apply_event(wid, "")
    assert engine.snapshot(wid) == before


@pytest.mark.parametrize(
    "mangle",
    [
        lambda b: b[:-10],
        lambda b: b[:20] + bytes([b[20] ^ 0xFF]) + b[21:],
        lambda b: b"not a snapshot at all",
        lambda b: b"",
    ],
)
def test_a_corrupt_snapshot_raises_a_clear_error(engine, clear_world, mangle):
    wid, _ = clear_world
    with pytest.raises(SnapshotError):
        engine.restore(mangle(engine.snapshot(wid)))


def test_a_chunk_past_the_cap_is_rejected(engine, clear_world):
    _, pid = clear_world
    with pytest.raises(ValueError):
        engine.step({pid: frozenset()}, {pid: engine.max_chunk + 1})


def test_nan_in_the_network_never_reaches_a_frame(engine, clear_world):
    _, pid = clear_world
    decoder = engine.decoder  # what draws the frames
    saved = {k: v.clone() for k, v in decoder.state_dict().items()}
    try:
        with torch.no_grad():
            for p in decoder.parameters():
                p.fill_(float("nan"))
        decoder.freeze()
        frames = engine.step({pid: frozenset("d")}, {pid: 2})[pid]
    finally:
        decoder.load_state_dict(saved)
        decoder.freeze()
    assert frames.dtype == np.uint8
    assert (frames == 0).all()  # NaN is mapped to black, never to arbitrary bytes
