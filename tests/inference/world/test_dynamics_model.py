"""The learned dynamics as the engine calls it, on the shipped weights."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest

from inference.training.simulator import TRAIN_SEED_LIMIT
from inference.training.simulator.dynamics import (
    FLAMMABLE,
    Canvas,
    Teacher,
    random_creature_batch,
    random_tile_batch,
)
from inference.world import spec
from inference.world.dynamics import (
    ASH,
    FIRE,
    LAVA,
    MARGIN,
    P_FLOOR,
    ROCKS,
    SIGHT,
    CreatureBatch,
    Dynamics,
    TileBatch,
    blocks_movement,
)

UNSEEN = (TRAIN_SEED_LIMIT, TRAIN_SEED_LIMIT + 2**20)  # the evaluation's validation seeds


@pytest.fixture(scope="module")
def dynamics() -> Dynamics:
    return Dynamics.load()


@pytest.fixture
def tiles() -> TileBatch:
    return random_tile_batch(np.random.default_rng(7), 24, UNSEEN)


def _rows(batch, rows):
    return type(batch)(**{k: np.asarray(v)[rows] for k, v in vars(batch).items()})


def test_tiles_gives_the_interior_of_every_chunk(dynamics, tiles):
    tokens, cover = dynamics.tiles(tiles)
    assert tokens.shape == cover.shape == (24, spec.CHUNK, spec.CHUNK)
    assert tokens.dtype == np.int64 and cover.dtype == np.uint8
    assert cover.max() < len(spec.COVERS)
    empty = _rows(tiles, slice(0, 0))
    assert dynamics.tiles(empty)[0].shape == (0, spec.CHUNK, spec.CHUNK)


def test_the_same_batch_gives_the_same_tick_whatever_it_is_batched_with(dynamics, tiles):
    whole = dynamics.tiles(tiles)
    again = dynamics.tiles(copy.deepcopy(tiles))
    halves = [dynamics.tiles(_rows(tiles, s)) for s in (slice(0, 9), slice(9, None))]
    for i in range(2):
        assert np.array_equal(whole[i], again[i])
        assert np.array_equal(whole[i], np.concatenate([h[i] for h in halves]))


def test_another_tick_draws_other_changes(dynamics, tiles):
    burning = replace(tiles, cover=np.where(FLAMMABLE[tiles.tokens] > 0, FIRE, 0).astype(np.uint8))
    a = dynamics.tiles(burning)[1]
    b = dynamics.tiles(replace(burning, tick=burning.tick + 1))[1]
    assert (a != b).any()


def test_a_tile_depends_on_its_patch_within_the_margin_only(dynamics, tiles):
    changed = copy.deepcopy(tiles)
    changed.cover[:, 0, 0] = FIRE  # the patch's corner: MARGIN tiles from the interior's corner
    changed.tokens[:, 0, 0] = LAVA
    before, after = dynamics.tile_probs(tiles)[0], dynamics.tile_probs(changed)[0]
    far = np.ones((spec.CHUNK, spec.CHUNK), bool)
    far[:MARGIN, :MARGIN] = False  # interior tiles within the corner's reach
    assert np.allclose(before[:, far], after[:, far], atol=1e-6)
    assert not np.allclose(before[:, 0, 0], after[:, 0, 0], atol=1e-6)


def test_fire_is_never_drawn_on_what_cannot_burn(dynamics):
    batch = random_tile_batch(np.random.default_rng(3), 256, UNSEEN)
    inner = (slice(None), slice(MARGIN, -MARGIN), slice(MARGIN, -MARGIN))
    probs, _ = dynamics.tile_probs(batch)
    bare = batch.cover[inner] == 0
    cannot = bare & (FLAMMABLE[batch.tokens[inner]] == 0)
    water = bare & (batch.tokens[inner] % len(spec.TILE_KINDS) == 3)
    water &= batch.tokens[inner] < spec.BIOME_TOKENS
    assert water.sum() > 100 and cannot.sum() > 1000
    assert probs[..., FIRE][cannot].max() < P_FLOOR
    _, cover = dynamics.tiles(batch)
    assert not (cover[cannot] == FIRE).any()


def test_only_lava_changes_its_token_and_it_cools_to_rocks(dynamics):
    rng = np.random.default_rng(5)
    batch = random_tile_batch(rng, 128, UNSEEN)
    inner = batch.tokens[:, MARGIN:-MARGIN, MARGIN:-MARGIN]
    changed = np.zeros(inner.shape, bool)
    for tick in range(40):
        tokens, _ = dynamics.tiles(replace(batch, tick=batch.tick + tick))
        changed |= tokens != inner
        assert (tokens[tokens != inner] == ROCKS).all()
    assert changed.any() and (inner[changed] == LAVA).all()


def test_creatures_never_step_into_fire_water_or_a_wall(dynamics):
    batch = random_creature_batch(np.random.default_rng(11), 512, UNSEEN)
    probs = dynamics.creature_probs(batch)
    heads = dynamics.creatures(batch)
    assert probs.shape == (512, len(spec.DIRECTIONS)) and heads.dtype == np.int64
    d = np.array(spec.DIRECTIONS)
    ahead = (slice(None), SIGHT + d[:, 1], SIGHT + d[:, 0])
    blocked = blocks_movement(batch.tokens[ahead], batch.cover[ahead])
    blocked[:, 0] = False
    assert blocked.sum() > 500
    assert probs[blocked].max() < P_FLOOR
    assert not blocked[np.arange(512), heads].any()


def test_creatures_run_from_an_adjacent_fire(dynamics):
    view = 2 * SIGHT + 1
    meadow = spec.token_of(spec.BIOMES.index("meadow"), 0)
    cover = np.zeros((1, view, view), np.uint8)
    cover[0, :, SIGHT + 1 :] = FIRE  # fire all along the east
    batch = CreatureBatch(
        tokens=np.full((1, view, view), meadow),
        cover=cover,
        kind=np.array([spec.CREATURES.index("deer")]),
        player=np.array([[10**6, 10**6]]),
        seed=np.array([1]),
        tick=np.array([0]),
        ident=np.array([0]),
    )
    probs = dynamics.creature_probs(batch)[0]
    west = probs[[i for i, (dx, _) in enumerate(spec.DIRECTIONS) if dx < 0]].sum()
    assert west > 0.6


def test_the_shipped_weights_burn_a_forest_as_the_teacher_does(dynamics):
    rng = np.random.default_rng(2)
    agree, burnt = [], []
    for seed in rng.integers(*UNSEEN, 4):
        start = Canvas.of_world(int(seed), spec.BIOMES.index("forest"), (4, 4), origin=(-16, -16))
        flammable = np.argwhere(FLAMMABLE[start.tokens[12:20, 12:20]] > 0) + 12
        for y, x in flammable[:3]:
            start.cover[y, x] = FIRE
        teacher, model = copy.deepcopy(start), copy.deepcopy(start)
        for tick in range(120):
            teacher.step(Teacher())
            model.step(dynamics)
            if tick + 1 == 40:
                agree.append(
                    ((teacher.cover == model.cover) & (teacher.tokens == model.tokens)).mean()
                )
        burnt.append([np.isin(c.cover, (FIRE, ASH)).sum() for c in (teacher, model)])
    t, m = np.array(burnt).sum(0)
    assert np.mean(agree) > 0.9
    assert t > 100 and abs(m - t) / t < 0.25


def test_missing_weights_fall_back_to_a_random_model_that_still_runs(tmp_path, tiles):
    with pytest.warns(UserWarning, match="random weights"):
        fallback = Dynamics.load(tmp_path / "absent.safetensors")
    tokens, cover = fallback.tiles(tiles)
    assert tokens.shape == (24, spec.CHUNK, spec.CHUNK)
