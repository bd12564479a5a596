"""The teacher's processes (what the learned dynamics is trained to do) and its canvas."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np

from inference.training.simulator.dynamics import (
    FLAMMABLE,
    Canvas,
    Teacher,
    random_creature_batch,
    random_tile_batch,
    teacher_creature_probs,
    teacher_tile_probs,
)
from inference.world import spec
from inference.world.dynamics import (
    ASH,
    FIRE,
    LAVA,
    P_FLOOR,
    PUDDLE,
    ROCKS,
    SIGHT,
    SNOW,
    VIEW,
    CreatureBatch,
)

W = {name: i for i, name in enumerate(spec.WEATHERS)}
FOREST = spec.BIOMES.index("forest")
DAY, NIGHT = spec.TIME_MINUTES[1], spec.TIME_MINUTES[3]


def forest_fire(seed: int = 3, weather: int = 0) -> Canvas:
    c = Canvas.of_world(seed, FOREST, (4, 4), origin=(-16, -16), weather=weather)
    burnable = np.argwhere(FLAMMABLE[c.tokens[12:20, 12:20]] > 0) + 12
    for y, x in burnable[:4]:
        c.cover[y, x] = FIRE
    return c


def run(c: Canvas, ticks: int) -> Canvas:
    c = copy.deepcopy(c)
    for _ in range(ticks):
        c.step(Teacher())
    return c


def count(c: Canvas, cover: int) -> int:
    return int((c.cover == cover).sum())


def test_tile_probabilities_are_distributions_with_no_rate_under_the_floor():
    batch = random_tile_batch(np.random.default_rng(0), 256, (0, 2**30))
    probs, cool = teacher_tile_probs(batch)
    assert np.allclose(probs.sum(-1), 1) and probs.min() >= 0
    rates = np.concatenate([probs.ravel(), cool.ravel()])
    assert not ((rates > 0) & (rates < P_FLOOR)).any()
    assert (probs[..., FIRE] >= P_FLOOR).sum() > 100  # the batch is rich in fire


def test_a_fire_spreads_through_a_forest_and_leaves_ash():
    after = run(forest_fire(), 80)
    assert count(after, FIRE) + count(after, ASH) > 60
    assert not (after.cover[~(FLAMMABLE[after.tokens] > 0)] == FIRE).any()


def test_rain_puts_a_fire_out_sooner():
    burning = run(forest_fire(), 40)
    dry, wet = (run(replace(burning, weather=w), 40) for w in (W["clear"], W["rain"]))
    assert count(wet, FIRE) < count(dry, FIRE) / 2


def test_puddles_gather_in_rain_and_dry_faster_in_the_sun():
    meadow = Canvas.of_world(8, spec.BIOMES.index("meadow"), (4, 4), weather=W["rain"])
    wet = run(meadow, 160)
    assert count(wet, PUDDLE) > 30
    by_day, by_night = (run(replace(wet, weather=0, minute=m), 120) for m in (DAY, NIGHT))
    assert count(by_day, PUDDLE) < count(by_night, PUDDLE) < count(wet, PUDDLE)


def test_snow_settles_while_it_snows_and_melts_by_day_faster_than_at_night():
    field = Canvas.of_world(9, spec.BIOMES.index("meadow"), (4, 4), weather=W["snow"])
    snowy = run(field, 240)
    assert count(snowy, SNOW) > 0.5 * snowy.cover.size
    by_day, by_night = (run(replace(snowy, weather=0, minute=m), 120) for m in (DAY, NIGHT))
    assert count(by_day, SNOW) < count(by_night, SNOW) < count(snowy, SNOW)


def test_a_lava_pool_cools_from_its_edge():
    c = Canvas.of_world(4, spec.BIOMES.index("volcanic"), (2, 2))
    c.tokens[4:12, 4:12] = LAVA
    probs, cool = teacher_tile_probs(c.tile_batch())
    cool = cool.reshape(2, 2, 8, 8).transpose(0, 2, 1, 3).reshape(16, 16)
    assert (cool[5:11, 5:11] == 0).all() and (cool[4, 4:12] > 0).all()
    later = run(c, 400)
    assert (later.tokens[4:12, 4:12] == ROCKS).sum() > 8
    assert set(np.unique(later.tokens[4:12, 4:12])) <= {LAVA, ROCKS}


def test_ash_does_not_grow_back_beside_a_fire():
    c = Canvas.of_world(5, FOREST, (2, 2))
    c.cover[:] = ASH
    c.cover[8, 8] = FIRE
    probs, _ = teacher_tile_probs(c.tile_batch())
    probs = probs.reshape(2, 2, 8, 8, -1).transpose(0, 2, 1, 3, 4).reshape(16, 16, -1)
    assert (probs[7:10, 7:10, 0] == 0).all() and (probs[0:5, 0:5, 0] > 0).all()


def _creature(kind: str, cover=None, tokens=None, player=(10**6, 10**6)) -> CreatureBatch:
    meadow = spec.token_of(spec.BIOMES.index("meadow"), 0)
    return CreatureBatch(
        tokens=np.full((1, VIEW, VIEW), meadow) if tokens is None else tokens,
        cover=np.zeros((1, VIEW, VIEW), np.uint8) if cover is None else cover,
        kind=np.array([spec.CREATURES.index(kind)]),
        player=np.array([player]),
        seed=np.array([0]),
        tick=np.array([0]),
        ident=np.array([0]),
    )


def _toward(probs: np.ndarray, dx: int) -> float:
    return float(probs[[i for i, d in enumerate(spec.DIRECTIONS) if d[0] == dx]].sum())


def test_creatures_flee_a_fire_and_never_step_into_it():
    cover = np.zeros((1, VIEW, VIEW), np.uint8)
    cover[0, :, SIGHT + 1] = FIRE
    p = teacher_creature_probs(_creature("fox", cover=cover))[0]
    assert _toward(p, 1) == 0 and _toward(p, -1) > 0.7


def test_wolves_come_to_a_player_and_rabbits_run_from_one():
    east = (4 * spec.TILE, 0)
    wolf = teacher_creature_probs(_creature("wolf", player=east))[0]
    rabbit = teacher_creature_probs(_creature("rabbit", player=east))[0]
    assert _toward(wolf, 1) > 0.5 and _toward(rabbit, -1) > 0.5


def test_fish_keep_to_the_water():
    water = spec.token_of(spec.BIOMES.index("meadow"), 3)
    tokens = np.full((1, VIEW, VIEW), spec.token_of(spec.BIOMES.index("meadow"), 0))
    tokens[0, :, :2] = water  # a lake four tiles west
    fish, fox = (teacher_creature_probs(_creature(k, tokens=tokens))[0] for k in ("fish", "fox"))
    assert _toward(fish, -1) > 0.6 and _toward(fish, -1) > _toward(fox, -1)


def test_creature_probabilities_are_distributions():
    p = teacher_creature_probs(random_creature_batch(np.random.default_rng(1), 256, (0, 2**30)))
    assert np.allclose(p.sum(-1), 1) and p.min() >= 0


def test_a_canvas_replays_the_same_ticks_bit_for_bit_and_another_seed_differs():
    a, b = (run(forest_fire(seed=3), 60) for _ in range(2))
    other = run(forest_fire(seed=3), 0)
    other.seed = 4
    other = run(other, 60)
    assert np.array_equal(a.cover, b.cover) and np.array_equal(a.tokens, b.tokens)
    assert not np.array_equal(a.cover, other.cover)
