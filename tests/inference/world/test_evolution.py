"""The world evolves by itself (`world/evolution.py` over the learned dynamics): fire spreads
and leaves ash, a place left behind catches up when a player comes back, a kept Live world
lives on while it stands empty, and all of it is exact: snapshot, restore and replays give
the same world byte for byte."""

import numpy as np
import pytest

from inference.narrative import story_writing
from inference.world import journal as jn
from inference.world import spec
from inference.world.dynamics import FIRE
from inference.world.evolution import ACTIVE, CATCH_UP
from inference.world.state import snapshot_bytes, state_from_bytes

FIRE_START = jn.Change(-1, -1, -1, -1, (), "", spec.PROCESSES.index("fire"))
ASH, SNOW = spec.COVERS.index("ash"), spec.COVERS.index("snow")
FOREST = "a dense pine forest"
PX = spec.CHUNK * spec.TILE


def covers(world, value: int) -> int:
    return int(sum((c == value).sum() for c in world.cover.values()))


def same_world(a: bytes, b: bytes) -> bool:
    """Whether two snapshots hold the same world, whatever its and its players' ids."""
    states = [state_from_bytes(s) for s in (a, b)]
    for state in states:
        state.world_id = "w"
        for n, p in enumerate(state.players):
            p.player_id = str(n)
    return snapshot_bytes(states[0]) == snapshot_bytes(states[1])


def run(engine, wid, pid, frames: int, keys=frozenset(), chunk: int = 12) -> None:
    for _ in range(frames // chunk):
        engine.step({pid: keys}, {pid: chunk})


@pytest.fixture
def forest(engine):
    wid = engine.create_world(prompt=FOREST, seed=4242)
    world = engine.worlds[wid]
    world.weather, world.minute, world.creatures, world.objects = 0, spec.TIME_MINUTES[1], [], []
    pid = engine.add_player(wid)
    yield wid, pid
    engine.drop_world(wid)


def test_a_fire_started_in_a_forest_spreads_and_burns_out_to_ash(engine, forest):
    wid, pid = forest
    world = engine.worlds[wid]
    engine.apply_change(world.world_id, FIRE_START)
    started = covers(world, FIRE)
    assert started > 0
    run(engine, wid, pid, 24 * 20)  # 20 s of play
    burnt = covers(world, FIRE) + covers(world, ASH)
    assert burnt > 2 * started, (started, burnt)  # it spread beyond where it started
    assert covers(world, ASH) > 0  # and burnt out somewhere
    # nothing burns on water
    for key, cover in world.cover.items():
        kinds = world.chunks[key] % len(spec.TILE_KINDS)
        water = (world.chunks[key] < spec.BIOME_TOKENS) & (kinds == 3)
        assert not (cover[water] == FIRE).any()


def test_rain_puts_a_fire_out_sooner(engine):
    left = {}
    for weather in ("clear", "rain"):
        wid = engine.create_world(prompt=FOREST, seed=99)
        world = engine.worlds[wid]
        world.weather, world.creatures, world.objects = spec.WEATHERS.index(weather), [], []
        pid = engine.add_player(wid)
        engine.apply_change(world.world_id, FIRE_START)
        run(engine, wid, pid, 24 * 15)
        left[weather] = covers(world, FIRE)
        engine.drop_world(wid)
    assert left["rain"] < left["clear"], left


def test_fire_blocks_the_way_and_ash_does_not(engine, clear_world):
    wid, pid = clear_world
    world = engine.worlds[wid]
    player = world.players[0]
    # the tile right of the avatar's box on fire: the avatar stops before it
    tx, ty = (player.x + spec.BOX_HALF + 2) // spec.TILE, player.y // spec.TILE
    for dy in (-1, 0, 1):
        world.set_cover(tx, ty + dy, FIRE)
    x0 = player.x
    engine.step({pid: frozenset("d")}, {pid: 4})
    assert player.x == x0
    for dy in (-1, 0, 1):
        world.set_cover(tx, ty + dy, ASH)
    engine.step({pid: frozenset("d")}, {pid: 4})
    assert player.x > x0


def test_snow_settles_while_it_snows(engine, clear_world):
    wid, pid = clear_world
    world = engine.worlds[wid]
    world.weather = spec.WEATHERS.index("snow")
    run(engine, wid, pid, 24 * 20)
    assert covers(world, SNOW) > 20


def _play(engine, wid, pid, start: int, end: int) -> None:
    """Seconds [start, end) of five minutes of the same inputs: walking about, a fire, rain,
    snow."""
    world = engine.worlds[wid]
    moves = [frozenset("d"), frozenset("ds"), frozenset(), frozenset("a"), frozenset("w")]
    for second in range(start, end):
        if second == 3:
            engine.apply_change(world.world_id, FIRE_START)
        if second == 60:
            engine.apply_change(
                world.world_id, jn.Change(spec.WEATHERS.index("rain"), -1, -1, -1, (), "")
            )
        if second == 150:
            engine.apply_change(
                world.world_id, jn.Change(spec.WEATHERS.index("snow"), -1, -1, -1, (), "")
            )
        keys = moves[(second // 7) % len(moves)]
        engine.step({pid: keys}, {pid: 12})
        engine.step({pid: keys}, {pid: 12})


@pytest.mark.timeout(600)  # ten minutes of play and five again, ticks and frames
def test_five_minutes_replayed_with_the_same_inputs_give_the_same_state(engine):
    """The same inputs give the same world byte for byte, with the ticks made at the end of
    each step or on the dynamics thread; and a world restored from a snapshot taken half way
    (a tick in the making in it) goes on to the same world."""
    snaps = []
    for threaded in (False, True):
        wid = engine.create_world(prompt="a forest by a lake, with foxes", seed=7)
        pid = engine.add_player(wid)
        if threaded:
            engine.start_evolution()
        try:
            _play(engine, wid, pid, 0, 150)
            half = engine.snapshot(wid)
            _play(engine, wid, pid, 150, 300)
        finally:
            engine.stop_evolution()
        snaps.append((half, engine.snapshot(wid)))
        engine.drop_world(wid)
    assert same_world(*(s[0] for s in snaps)) and same_world(*(s[1] for s in snaps))
    world = engine.worlds[engine.restore(snaps[0][0])]
    assert world.pending is not None  # the snapshot holds the tick in the making
    (pid,) = [p.player_id for p in world.players]
    _play(engine, world.world_id, pid, 150, 300)  # the second half again, from the snapshot
    assert same_world(engine.snapshot(world.world_id), snaps[0][1])
    assert covers(world, FIRE) + covers(world, ASH) + covers(world, SNOW) > 0
    engine.drop_world(world.world_id)


def test_a_recorded_world_replays_to_the_same_state(engine):
    wid = engine.create_world(prompt=FOREST, seed=31)
    pid = engine.add_player(wid)
    _, start, frames = engine.checkpoint(wid)
    _play(engine, wid, pid, 0, 40)
    entries = engine.take_journal(wid)
    replayer = engine.replayer()
    rid = replayer.start_replay(start, frames)
    for entry in entries:
        replayer.replay_op(rid, jn.from_json(jn.to_json(entry)))
    assert replayer.snapshot(rid) == engine.snapshot(wid)
    engine.drop_world(wid)


def test_a_place_left_behind_catches_up_when_a_player_comes_back(engine, forest):
    wid, pid = forest
    world = engine.worlds[wid]
    engine.apply_change(world.world_id, FIRE_START)
    run(engine, wid, pid, 24)
    home = (world.players[0].x // PX, world.players[0].y // PX)
    fire_key = max(world.cover, key=lambda k: (world.cover[k] == FIRE).sum())
    # away, out of reach of the dynamics, and wait there (the tick in the making lands first)
    player = world.players[0]
    player.x -= (2 * ACTIVE + 2) * PX
    run(engine, wid, pid, 2 * spec.TICK_FRAMES, chunk=spec.TICK_FRAMES)
    left_as = world.cover[fire_key].copy()
    lag_from = world.clocks[fire_key]
    run(engine, wid, pid, 24 * 30, chunk=16)
    np.testing.assert_array_equal(world.cover[fire_key], left_as)  # nobody near: it waited
    assert world.clocks[fire_key] == lag_from
    # back home: it catches up, CATCH_UP ticks of its own a tick, until it is in step again
    player.x += (2 * ACTIVE + 2) * PX
    assert (player.x // PX, player.y // PX) == home
    run(engine, wid, pid, 24 * 10, chunk=16)
    assert world.clocks[fire_key] == spec.tick_of(world.t)
    assert (world.cover[fire_key] != left_as).any()
    assert CATCH_UP > 1


def test_a_kept_live_world_lives_on_while_it_stands_empty(engine):
    """Kept while it snows, back an hour later: it shows more snow than the same world back
    at once (its chunks catch up on the time it stood empty)."""
    wid = engine.create_world(prompt="a green meadow", seed=5)
    pid = engine.add_player(wid)
    world = engine.worlds[wid]
    world.weather, world.creatures = spec.WEATHERS.index("snow"), []
    run(engine, wid, pid, 24)
    t0, minute0 = world.t, world.minute
    kept = engine.snapshot(wid, kept_at=1_000_000.0)
    engine.drop_world(wid)
    snowed = {}
    for away in (0, 3600):
        back = engine.restore(kept, new_id=True)
        engine.catch_up_kept(back, now=1_000_000.0 + away)
        world = engine.worlds[back]
        assert world.kept_at == 0.0
        if away:
            assert world.t - t0 == away * spec.WORLD_FPS
            assert world.minute == (minute0 + away * spec.WORLD_FPS // 10) % spec.DAY_MINUTES
        run(engine, back, world.players[0].player_id, 24 * 3)
        snowed[away] = covers(world, SNOW)
        engine.drop_world(back)
    assert snowed[3600] > snowed[0] * 1.5, snowed


def test_a_change_starting_a_fire_round_trips_through_the_journal():
    assert jn.from_json(jn.to_json(FIRE_START)) == FIRE_START
    old = ["change", 1, -1, -1, 2, ["apple"], "p"]  # recorded before processes
    assert jn.from_json(old) == jn.Change(1, -1, -1, 2, ("apple",), "p", -1)


def test_stories_know_what_lies_on_the_ground(engine, forest):
    wid, pid = forest
    assert engine.describe(wid)["covers"] == []
    engine.apply_change(wid, FIRE_START)
    run(engine, wid, pid, 24 * 4)
    world = engine.describe(wid)
    assert "fire" in world["covers"]
    assert "a fire burning" in story_writing.world_line(world)
