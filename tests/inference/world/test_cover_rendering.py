"""The covers (fire, ash, puddle, snow) as the shipped renderer draws them: like the simulator
draws them, each unlike the others and unlike the tile it covers; frames without a cover as
they were before the covers; a burning tile lighting the night round it."""

from __future__ import annotations

import functools
import shutil

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from inference.training import simulator as sim
from inference.training.config import TrainConfig
from inference.training.finetune import fit_covers
from inference.world import scenes, spec
from inference.world.decoder import FrameDecoder, out_side
from inference.world.engine import DEFAULT_WEIGHTS as WEIGHTS
from inference.world.model import COVER_LOOKALIKES, WorldModel
from inference.world.state import WorldState

FIRST_COVER = spec.FIRST_COVER_TOKEN
GROUND = spec.token_of(spec.BIOMES.index("meadow"), 0)
NOON, NIGHT = spec.TIME_MINUTES[1], spec.TIME_MINUTES[3]
W, T = spec.WINDOW, spec.TILE


@pytest.fixture(scope="module")
def model() -> WorldModel:
    model = WorldModel.from_file(WEIGHTS)
    model.renderer.freeze()
    return model


def tensors(scene: sim.Scene) -> tuple:
    arrays = (scene.tokens, scene.offset, scene.weather, scene.minute, scene.phase, scene.sprites)
    return tuple(torch.as_tensor(np.asarray(a), dtype=torch.long) for a in arrays)


def block_scene(token: int, minute: int) -> sim.Scene:
    """Meadow grass with a 5x5 block of ``token`` at the centre of the frame, no sprites."""
    tokens = np.full((1, W, W), GROUND)
    tokens[0, 7:12, 7:12] = token
    return sim.Scene(
        tokens=tokens,
        offset=np.zeros((1, 2), dtype=np.int64),
        weather=np.zeros(1, dtype=np.int64),
        minute=np.array([minute]),
        phase=np.zeros((1, 2), dtype=np.int64),
        sprites=np.full((1, spec.MAX_SPRITES, 3), -1),
    )


def block_colour(frames: np.ndarray) -> np.ndarray:
    """Mean RGB of the block's tiles (window tiles 7..11 are frame pixels 48..88)."""
    return frames[0, 48:88, 48:88].reshape(-1, 3).astype(np.float64).mean(0)


@pytest.mark.parametrize("minute", [NOON, NIGHT])
def test_each_cover_is_drawn_like_the_teacher_and_unlike_the_tile_it_covers(model, minute):
    drawn = {}
    for i, name in enumerate(spec.COVERS[1:]):
        scene = block_scene(FIRST_COVER + i, minute)
        drawn[name] = block_colour(model.renderer.frames(*tensors(scene)).numpy())
        teacher = block_colour(sim.render(scene))
        assert np.abs(drawn[name] - teacher).max() < 10, (name, drawn[name], teacher)
    grass = block_colour(model.renderer.frames(*tensors(block_scene(GROUND, minute))).numpy())
    for name, colour in drawn.items():
        assert np.linalg.norm(colour - grass) > 40, (name, colour, grass)
    names = list(drawn)
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            gap = np.linalg.norm(drawn[names[a]] - drawn[names[b]])
            assert gap > 25, (names[a], names[b], gap)


def test_frames_without_covers_are_as_the_renderer_drew_them_before_the_covers(model, tmp_path):
    """Weights in the layout before the covers (the renderer's rows of the canvas tokens,
    UNKNOWN and MASK, no cover detail patches) draw every frame without a cover bit for bit
    as the shipped ones."""
    state = load_file(str(WEIGHTS))
    state["renderer.tok.weight"] = state["renderer.tok.weight"][:FIRST_COVER].contiguous()
    assert state.pop("renderer.cover_detail").abs().sum() > 0  # the fit drew the detail
    old_path = tmp_path / "before_covers.safetensors"
    with safe_open(str(WEIGHTS), framework="pt") as f:
        save_file(state, str(old_path), metadata=f.metadata())
    old = WorldModel.from_file(old_path)
    old.renderer.freeze()
    scene, _ = sim.random_scenes(np.random.default_rng(7), 24, frame=spec.FRAME)
    assert (scene.tokens < FIRST_COVER).all()
    assert np.array_equal(
        old.renderer.frames(*tensors(scene)).numpy(), model.renderer.frames(*tensors(scene)).numpy()
    )
    # the old layout's cover rows start as their look-alike tokens', which the fit moved
    rows = old.renderer.tok.weight
    assert torch.equal(rows[FIRST_COVER:], rows[list(COVER_LOOKALIKES.values())])
    assert not old.renderer.cover_detail.any()  # and they draw no detail of their own
    covered, _ = sim.random_scenes(np.random.default_rng(7), 4, frame=spec.FRAME, covers=0.5)
    assert not np.array_equal(
        old.renderer.frames(*tensors(covered)).numpy(),
        model.renderer.frames(*tensors(covered)).numpy(),
    )


def test_the_cover_fit_moves_the_cover_rows_and_detail_patches_alone(tmp_path):
    """`train --fit-covers`: the covers' rows of the token table and their detail patches
    learn; every other weight, and the other rows, stay as they were (the fit checks the
    frames without a cover itself)."""
    for name in ("world_model.safetensors", "config.json"):
        shutil.copy(WEIGHTS.parent / name, tmp_path / name)
    before = load_file(str(tmp_path / "world_model.safetensors"))
    fit_covers(TrainConfig(out=str(tmp_path), batch_render=4), steps=2)
    after = load_file(str(tmp_path / "world_model.safetensors"))
    changed = {k for k, v in after.items() if not torch.equal(v, before[k])}
    assert changed == {"renderer.tok.weight", "renderer.cover_detail"}
    tok = "renderer.tok.weight"
    assert torch.equal(after[tok][:FIRST_COVER], before[tok][:FIRST_COVER])


def camera_frames(tokens: np.ndarray, minute: int) -> np.ndarray:
    """Frames of a camera whose decode window is ``tokens`` (frame pixel 0 on a tile edge), as
    the engine draws them: the scene tuple of `scenes.scene`, lights and all, by the shipped
    frame decoder."""
    world = WorldState("w", 1, "", np.zeros(len(spec.BIOMES), np.float32), 0, minute)
    left = top = 0
    in_view = scenes.things_in_view(world, left, top, {}, tokens)
    sprites = np.full((spec.MAX_SPRITES, 3), -1, dtype=np.int64)
    one = (tokens, (0, 0), 0, minute, (0, 0), sprites, in_view)
    return scenes.render(_decoder(), [one], torch.zeros(0, 16, 16, 4))[0]


@functools.cache
def _decoder() -> FrameDecoder:
    return FrameDecoder.load(WEIGHTS.parent)


def test_a_burning_tile_lights_the_night_round_it_and_nothing_by_day():
    grass = np.full((W, W), GROUND)
    burning = grass.copy()
    burning[9, 9] = scenes.FIRE_TOKEN  # frame pixels 64..72 both ways, its centre (68, 68)
    world = WorldState("w", 1, "", np.zeros(len(spec.BIOMES), np.float32), 0, NIGHT)
    assert scenes.things_in_view(world, 0, 0, {}, grass) is None  # the frame path as before
    assert (scenes.things_in_view(world, 0, 0, {}, burning)[1][0] == (68, 68)).all()
    side = out_side()  # drawn at 1.5x: the tile is frame pixels 96..108
    around = np.zeros((side, side), dtype=bool)
    around[72:132, 72:132] = True
    around[96:108, 96:108] = False  # the burning tile itself
    lit = camera_frames(burning, NIGHT)[around].astype(np.float64).mean()
    dark = camera_frames(grass, NIGHT)[around].astype(np.float64).mean()
    assert lit > dark + 15, (lit, dark)
    far = camera_frames(burning, NIGHT)[:12, :12].astype(np.float64).mean()
    assert far < dark + 3  # a pool of light, not a brighter night
    day_lit, day = camera_frames(burning, NOON), camera_frames(grass, NOON)
    glow = day_lit[around].astype(np.float64).mean() - day[around].astype(np.float64).mean()
    assert abs(glow) < 4, glow  # by day no pool of light
