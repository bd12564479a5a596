"""The evaluation's measuring tools, checked where the right answer is known: a renderer whose
tables are the simulator's own, shifted frames, and hand-made classifier outputs."""

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from inference.training import evaluate as ev
from inference.training import simulator as sim
from inference.training.evaluation.codec import codec_scenes, encode, render_latents, visible_tiles
from inference.training.evaluation.events import drawn, event_cases
from inference.training.evaluation.measures import (
    EVENT_KINDS,
    PSNR_CAP,
    Judge,
    at_side,
    psnr,
    rates,
)
from inference.training.evaluation.motion import REVISIT_SIDES, phase_shift
from inference.training.evaluation.prompts import biome_hits
from inference.training.evaluation.rollouts import scene_of, stratified_prompts
from inference.world import spec
from inference.world.engine import WEIGHTS_DIR
from inference.world.model import LIGHT_STEPS, ModelConfig, Renderer


def simulator_renderer() -> Renderer:
    """A Renderer whose frozen tables are the simulator's textures, sprites, light and
    atmospheres: it draws exactly what `sim.render` draws."""
    r = Renderer(ModelConfig())
    tex = sim.TEXTURES.reshape(spec.RENDER_TOKENS, -1, 3)  # UNKNOWN and MASK black
    alpha, atmo = sim.OVERLAYS[..., 3:], sim.ATMOSPHERE_AFFINE[:, None, None]  # (9, 1, 1, 2, 3)
    keep = (1 - alpha) * atmo[..., 0, :]
    add = (1 - alpha) * atmo[..., 1, :] + sim.OVERLAYS[..., :3] * alpha
    light = sim.light_affine(np.arange(LIGHT_STEPS) * (spec.DAY_MINUTES // LIGHT_STEPS))
    tables = (tex, sim.SPRITES.reshape(spec.SPRITE_KINDS, -1, 4), keep, add, light.reshape(-1, 6))
    r._frozen = tuple(torch.tensor(t, dtype=torch.float32) for t in tables)
    return r


def truthful_encoder(weather: int, minute: int):
    """An encoder head that names the true atmosphere and half hour."""
    half = minute // (spec.DAY_MINUTES // LIGHT_STEPS)
    logits = {
        "weather": torch.eye(len(spec.WEATHERS))[weather][None],
        "minute": torch.eye(LIGHT_STEPS)[half][None],
    }
    return SimpleNamespace(frame=lambda x: logits)


@pytest.fixture(scope="module")
def renderer():
    return simulator_renderer()


def test_the_simulator_renderer_matches_the_simulator(renderer):
    scene = codec_scenes(np.random.default_rng(0), 3)
    lats = [
        {
            "tokens": torch.from_numpy(scene.tokens[i]),
            "offset": tuple(scene.offset[i]),
            "weather": int(scene.weather[i]),
            "minute": int(scene.minute[i]),
            "phase": tuple(scene.phase[i]),
            "avatar": int(scene.sprites[i, 0, 0]),
        }
        for i in range(3)
    ]
    out = render_latents(renderer, lats)
    assert out.shape == (3, spec.FRAME, spec.FRAME, 3)
    assert np.abs(out.astype(int) - sim.render(scene)).max() <= 1


@pytest.mark.timeout(900)  # nine full searches (offset, phase, light) on two cores
def test_the_codec_search_recovers_every_atmosphere_exactly(renderer):
    scene = codec_scenes(np.random.default_rng(1), len(spec.WEATHERS))
    frames = sim.render(scene)
    for i, frame in enumerate(frames):
        encoder = truthful_encoder(int(scene.weather[i]), int(scene.minute[i]))
        lat = encode(SimpleNamespace(renderer=renderer, encoder=encoder), frame)
        assert lat["offset"] == tuple(int(v) for v in scene.offset[i])
        rows, cols = visible_tiles(scene.offset[i])
        np.testing.assert_array_equal(
            lat["tokens"][rows, cols].numpy(), scene.tokens[i][rows, cols]
        )
        assert lat["avatar"] == scene.sprites[i, 0, 0]
        assert psnr(render_latents(renderer, [lat])[0], frame) > 45, spec.WEATHERS[i]


def test_visible_tiles_are_the_tiles_wholly_inside_the_frame():
    rows, cols = visible_tiles((0, 5))
    assert (cols.start, cols.stop) == (1, 17)  # aligned: window tiles 1..16
    assert (rows.start, rows.stop) == (2, 17)  # shifted: tile 1 is cut at the top


def test_phase_shift_measures_how_far_the_picture_moved():
    world = sim.SimWorld(seed=5, biome=spec.BIOMES.index("city"))
    world.add_player()
    a = world.render()
    world.players[0][0] += 6  # camera right: the picture moves left
    world.players[0][1] -= 2
    assert phase_shift(a, world.render()) == (-6, 2)


def test_psnr_caps_identical_frames_and_can_ignore_pixels():
    a = np.zeros((4, 4, 3), np.uint8)
    b = a.copy()
    b[0, 0] = 255
    assert psnr(a, a) == PSNR_CAP
    assert psnr(a, b) < 20
    mask = np.ones((4, 4), bool)
    mask[0, 0] = False
    assert psnr(a, b, mask) == PSNR_CAP


def probs_with(**shares) -> np.ndarray:
    p = np.full(len(spec.BIOMES), 0.01)
    for name, share in shares.items():
        p[spec.BIOMES.index(name)] = share
    return p / p.sum()


def test_a_mixed_prompt_counts_only_when_both_biomes_show():
    forest, desert = spec.BIOMES.index("forest"), spec.BIOMES.index("desert")
    mixed = {"biome": forest, "biome2": desert}
    assert all(biome_hits(probs_with(forest=0.5, desert=0.4), mixed).values())
    # a pure forest whose runner-up happens to be desert: desert is not really there
    hits = biome_hits(probs_with(forest=0.9, desert=0.05), mixed)
    assert hits == {forest: True, desert: False}
    single = {"biome": desert, "biome2": -1}
    assert biome_hits(probs_with(desert=0.6, forest=0.3), single) == {desert: True}
    assert biome_hits(probs_with(forest=0.6, desert=0.3), single) == {desert: False}


def test_stratified_prompts_ask_for_every_biome_and_atmosphere():
    prompts = stratified_prompts(np.random.default_rng(3), 2 * len(spec.BIOMES))
    biomes = {labels["biome"] for _, labels in prompts}
    weathers = {labels["weather"] for _, labels in prompts}
    assert biomes == set(range(len(spec.BIOMES)))
    assert weathers == set(range(len(spec.WEATHERS)))
    alone = stratified_prompts(np.random.default_rng(4), len(spec.BIOMES), mixed=False)
    assert all(labels["biome2"] == -1 for _, labels in alone)


def test_every_event_value_is_a_case():
    cases = event_cases(2)
    sizes = {k: len(v) for k, v in EVENT_KINDS.items()}
    assert len(cases) == 2 * sum(sizes.values())
    assert {(k, v) for k, v in cases} == {(k, v) for k, n in sizes.items() for v in range(n)}


def test_drawn_wants_the_frame_to_move_toward_the_reference():
    ref = np.full((8, 8, 3), 200.0)
    before = np.zeros((8, 8, 3), np.uint8)
    mask = np.ones((8, 8), bool)
    assert drawn(before, np.full((8, 8, 3), 195, np.uint8), ref, mask) == (True, 5.0)
    assert not drawn(before, before, ref, mask)[0]  # nothing changed
    assert not drawn(before, np.full((8, 8, 3), 120, np.uint8), ref, mask)[0]  # wrongly
    assert drawn(before, before, ref, np.zeros((8, 8), bool)) == (False, None)  # not in view


def test_a_revisit_loop_brings_the_particles_back_where_they_were():
    for weather in range(len(spec.WEATHERS)):
        for side in REVISIT_SIDES:
            assert spec.overlay_phase(weather, 1) == spec.overlay_phase(weather, 1 + 4 * side)


def test_the_report_has_a_table_per_concept():
    r = {k: 1.0 for k in ev.GOALS}
    tables = {
        "prompt_adherence_by_biome": rates({"forest": [True, False], "desert": []}),
        "event_response_by_value": {"thing": rates({"well": [True]})},
    }
    text = ev.report(r, tables, {})
    assert "| forest | 50.0 | 2 | NO |" in text
    assert "desert" not in text  # never tried: no row
    assert "| thing: well | 100.0 | 1 | yes |" in text


def test_the_judge_splits_its_belief_on_a_frame_showing_two_biomes():
    judge = Judge(WEIGHTS_DIR / "classifier.safetensors")
    rng = np.random.default_rng(4)
    scene, _ = sim.random_scenes(rng, 1, sprite_prob=0.0, things=0.0, mixed=0.0)
    scene.weather[:], scene.minute[:] = 0, 720
    desert, snow = spec.BIOMES.index("desert"), spec.BIOMES.index("snow")
    w = scene.tokens.shape[-1]
    tx, ty = np.meshgrid(np.arange(w), np.arange(w))
    left = sim.terrain_tokens(1, desert, tx, ty)
    right = sim.terrain_tokens(1, snow, tx, ty)
    scene.tokens[0] = np.where(tx < w // 2, left, right)
    probs = judge(sim.render(scene))["biome"][0]
    assert set(np.argsort(-probs)[:2]) == {desert, snow}
    assert probs[[desert, snow]].min() >= 0.25
    scene.tokens[0] = left  # and a frame of one biome is that biome alone
    probs = judge(sim.render(scene))["biome"][0]
    assert probs.argmax() == desert and probs[snow] < 0.1


def test_python_m_inference_evaluate_is_the_evaluation():
    """The issue and the README name `python -m inference.evaluate`: it runs the evaluation."""
    out = subprocess.run(
        [sys.executable, "-m", "inference.evaluate", "--help"],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "Evaluate the world model on unseen seeds." in out.stdout
    assert "--json" in out.stdout


def test_a_players_scene_for_the_simulator_is_the_view_the_engine_draws(engine):
    # the engine's scene grew the open-vocabulary things; the revisit measure broke unseen
    wid = engine.create_world(prompt="a quiet meadow", seed=5)
    pid = engine.add_player(wid)
    engine.step({pid: frozenset()}, {pid: 1})
    got = scene_of(engine, wid, pid)
    world = engine.worlds[wid]
    player = next(p for p in world.players if p.player_id == pid)
    tokens, offset, *_ = engine._scene(world, player)
    assert np.array_equal(got.tokens[0], tokens) and tuple(got.offset[0]) == tuple(offset)
    assert got.sprites.shape == (1, spec.MAX_SPRITES, 3)
    engine.drop_world(wid)


def test_a_mask_of_the_simulators_frame_is_scaled_to_the_frame_drawn():
    mask = np.zeros((128, 128), bool)
    mask[:64, :32] = True
    big = at_side(mask, 192)
    assert big.shape == (192, 192)
    assert big[:96, :48].all() and not big[96:].any() and not big[:, 48:].any()
    frame = np.arange(192 * 192 * 3).reshape(192, 192, 3)
    assert at_side(frame, 128).shape == (128, 128, 3)  # and a drawn frame back to the view
