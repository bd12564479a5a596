import numpy as np
import pytest

from inference.training import simulator as sim
from inference.training.simulator import teacher
from inference.world import spec
from inference.world.sprite_scale import resample_sprites

MEADOW = spec.BIOMES.index("meadow")
GRASS = spec.token_of(MEADOW, 0)
TREE = spec.token_of(MEADOW, 2)
POND = spec.token_of(MEADOW, 3)
CLEAR, RAIN, SNOW = (spec.WEATHERS.index(w) for w in ("clear", "rain", "snow"))


def scene(tokens, minute=720, weather=CLEAR, offset=(0, 0), sprites=None) -> sim.Scene:
    tokens = np.asarray(tokens)[None]
    return sim.Scene(
        tokens=tokens,
        offset=np.array([offset]),
        weather=np.array([weather]),
        minute=np.array([minute]),
        phase=np.zeros((1, 2), int),
        sprites=np.full((1, spec.MAX_SPRITES, 3), -1) if sprites is None else sprites,
    )


def field(frame=128, token=GRASS) -> np.ndarray:
    w = frame // spec.TILE + 3
    return np.full((w, w), token)


def lone_tree(frame=128) -> np.ndarray:
    tokens = field(frame)
    c = tokens.shape[0] // 2
    tokens[c, c] = TREE
    return tokens


def grey(img) -> np.ndarray:
    return img.astype(np.float64).mean(-1)


@pytest.mark.parametrize("frame", [64, 128])
def test_it_draws_frames_one_and_a_half_times_the_view(frame):
    scenes, _ = sim.random_scenes(np.random.default_rng(1), 3, frame=frame, covers=0.1)
    out = sim.render_rich(scenes)
    assert out.shape == (3, teacher.out_side(frame), teacher.out_side(frame), 3)
    assert out.dtype == np.uint8


def test_the_same_scene_draws_the_same_frame():
    scenes, _ = sim.random_scenes(np.random.default_rng(2), 4, frame=64, covers=0.1)
    np.testing.assert_array_equal(sim.render_rich(scenes), sim.render_rich(scenes))


def shadow_centre(minute) -> tuple[float, float]:
    """Where the ground round a lone tree darkens (x, y of the darkening's centre of mass,
    relative to the tree's tile centre, output px), and how many pixels darken."""
    tree = grey(sim.render_rich(scene(lone_tree(), minute))[0])
    bare = grey(sim.render_rich(scene(field(), minute))[0])
    dark = np.clip(bare - tree, 0, None) * (bare - tree > 3)
    # only below the tree's own body: its drawn body is no shadow
    ys, xs = np.mgrid[0 : dark.shape[0], 0 : dark.shape[1]]
    c = (lone_tree().shape[0] // 2 - 1) * 12 + 6  # the tree tile's centre in the frame
    body = (np.abs(xs - c) < 7) & (ys > c - 13) & (ys < c + 7)
    dark[body] = 0
    return (
        (dark * (xs - c)).sum() / dark.sum(),
        (dark * (ys - c)).sum() / dark.sum(),
        (dark > 0).sum(),
    )


def test_a_tall_tiles_shadow_turns_with_the_sun():
    morning_x, _, _ = shadow_centre(8 * 60)
    afternoon_x, _, long = shadow_centre(17 * 60)
    _, noon_y, short = shadow_centre(12 * 60)
    assert morning_x < -6  # the sun in the east: the shadow falls west
    assert afternoon_x > 6
    assert noon_y < 0  # the sun high in the south: a short shadow to the north
    assert long > 2 * short


def test_at_night_a_light_lights_its_surroundings_and_by_day_hardly():
    things = (
        np.full((1, 1, 3), -1),
        np.zeros((1, 16, 16, 4), np.float32),
        np.array([[[64, 64]]]),
    )

    def near_and_far(minute):
        lit = grey(sim.render_rich(scene(field(), minute), things)[0])
        unlit = grey(sim.render_rich(scene(field(), minute))[0])
        return lit[90:102, 90:102].mean() - unlit[90:102, 90:102].mean(), (
            lit[:12, :12].mean() - unlit[:12, :12].mean()
        )

    near, far = near_and_far(23 * 60)
    assert near > 25 and abs(far) < 2
    near_noon, _ = near_and_far(12 * 60)
    assert abs(near_noon) < 2


def test_rain_darkens_the_ground_and_snow_whitens_it():
    clear = grey(sim.render_rich(scene(field(), weather=CLEAR))[0]).mean()
    wet = sim.render_rich(scene(field(), weather=RAIN))[0]
    snowy = sim.render_rich(scene(field(), weather=SNOW))[0]
    assert grey(wet).mean() < clear - 15
    assert grey(snowy).mean() > clear + 50
    assert (snowy.min(-1) > 180).mean() > 0.5  # white, not just brighter


def test_water_mirrors_the_sky_of_the_hour():
    noon = sim.render_rich(scene(field(token=POND), 12 * 60))[0].reshape(-1, 3).mean(0)
    dusk = sim.render_rich(scene(field(token=POND), 18 * 60 + 30))[0].reshape(-1, 3).mean(0)
    assert noon[2] > noon[0] + 40  # blue
    assert dusk[0] > dusk[2]  # warm


def test_a_still_scene_barely_changes_from_one_minute_to_the_next():
    scenes, _ = sim.random_scenes(np.random.default_rng(3), 8, frame=64)
    scenes.weather[:] = CLEAR
    a = sim.render_rich(scenes).astype(np.float64)
    scenes.minute = (scenes.minute + 1) % spec.DAY_MINUTES
    b = sim.render_rich(scenes).astype(np.float64)
    assert np.abs(a - b).mean() < 1


def test_moving_the_camera_two_world_pixels_moves_the_frame_three():
    tokens = lone_tree()
    tokens[4, 12] = POND
    tokens[14, 5] = spec.thing_token(spec.THINGS.index("house"))
    sprites = np.full((1, spec.MAX_SPRITES, 3), -1)
    sprites[0, 0] = (spec.AVATAR_COLORS, 60, 50)
    moved = sprites.copy()
    moved[0, 0, 1] -= 2  # the avatar stays put in the world: 2 px left in the frame
    for minute in (9 * 60, 23 * 60):
        a = sim.render_rich(scene(tokens, minute, offset=(1, 2), sprites=sprites))[0]
        b = sim.render_rich(scene(tokens, minute, offset=(3, 2), sprites=moved))[0]
        np.testing.assert_array_equal(b[:, :-3], a[:, 3:])


def test_sprites_resample_to_the_output_scale_with_hard_alpha():
    out = resample_sprites(sim.SPRITES, 12)
    assert out.shape == (spec.SPRITE_KINDS, 12, 12, 4)
    alpha = out[..., 3]
    assert ((alpha == 0) | (alpha == 1) | (alpha == 0.5)).all()
    # a solid sprite's colour comes through unchanged
    np.testing.assert_allclose(out[0, 6, 6, :3], sim.SPRITES[0, 4, 4, :3], atol=1e-6)
