"""The frame decoder: the network that draws every served frame (issue 47)."""

import numpy as np
import pytest
import torch

from inference.training import simulator as sim
from inference.world import spec
from inference.world.decoder import SNOW, FrameDecoder, out_side, paste_layer, scaled, texture
from inference.world.engine import WEIGHTS_DIR
from inference.world.sprite_scale import resample_sprites


@pytest.fixture(scope="module")
def decoder():
    return FrameDecoder.load(WEIGHTS_DIR)


def tensors(scene):
    return [
        torch.from_numpy(np.asarray(a))
        for a in (scene.tokens, scene.offset, scene.weather, scene.minute, scene.phase)
    ] + [torch.from_numpy(scene.sprites)]


def scenes(n=4, frame=spec.FRAME, seed=3):
    scene, _ = sim.random_scenes(np.random.default_rng(seed), n, frame=frame, seeds=(2**30, 2**31))
    return scene


def test_a_128_pixel_view_is_drawn_at_192_and_a_64_pixel_one_at_96(decoder):
    for frame in (spec.FRAME, 64):
        out = decoder.frames(*tensors(scenes(2, frame)))
        assert out.dtype == torch.uint8
        assert out.shape == (2, out_side(frame), out_side(frame), 3)
    assert out_side() == 192


def test_the_same_scene_draws_the_same_bytes(decoder):
    args = tensors(scenes(3))
    assert torch.equal(decoder.frames(*args), decoder.frames(*args))


def test_the_shipped_decoder_draws_what_the_teacher_draws_on_unseen_worlds(decoder):
    scene = scenes(8, seed=11)
    drawn = decoder.frames(*tensors(scene)).numpy().astype(np.float64)
    teacher = sim.render_rich(scene).astype(np.float64)
    mse = ((drawn - teacher) ** 2).mean()
    psnr = 10 * np.log10(255.0**2 / mse)
    assert psnr > 28.0, psnr
    # and not the old flat atlas: the same views upscaled from the simulator's flat drawing
    flat = sim.render(scene).repeat(3, 1).repeat(3, 2)[:, ::2, ::2].astype(np.float64)
    assert ((drawn - teacher) ** 2).mean() < ((flat - teacher) ** 2).mean()


def test_a_frames_bytes_do_not_depend_on_what_else_is_in_its_batch(decoder):
    """The worker draws every camera of a step in one batch and a replay draws them in others:
    a frame must come out the same alone, beside one other, or among eleven (a product over
    the whole batch's rows rounded otherwise as it grew, and a recording replayed a level off).
    In bfloat16, the precision this CPU picks; oneDNN's float32 convolutions are not invariant."""
    scene = scenes(12, seed=7)
    scene.weather[::3] = spec.WEATHERS.index("rain")  # the particles' path too
    args = tensors(scene)
    was, decoder.bf16 = decoder.bf16, True
    try:
        full = decoder.frames(*args)
        for start, size in ((0, 1), (3, 1), (0, 2), (2, 3), (4, 5), (5, 7)):
            part = decoder.frames(*[a[start : start + size] for a in args])
            assert torch.equal(part, full[start : start + size]), (start, size)
    finally:
        decoder.bf16 = was


def test_a_camera_two_pixels_on_moves_the_picture_three_pixels(decoder):
    """Translation-equivariant: where nothing moves, the view 2 world pixels to the right is
    the same picture 3 output pixels to the left (away from the window's edges)."""
    scene = scenes(1, seed=5)
    scene.sprites[:] = -1
    scene.weather[:] = spec.WEATHERS.index("clear")  # particles stay with the screen, not the world
    scene.offset[:] = (2, 0)
    a = decoder.frames(*tensors(scene)).numpy()[0].astype(int)
    scene.offset[:] = (4, 0)
    b = decoder.frames(*tensors(scene)).numpy()[0].astype(int)
    m = 48  # the receptive field's reach of the window's edge, and more
    assert np.abs(a[m:-m, m + 3 : -m] - b[m:-m, m : -m - 3]).max() <= 1


def test_a_sprite_is_pasted_at_one_and_a_half_times_its_position():
    table = torch.zeros(1, 12, 12, 4)
    table[0, :, :, :] = torch.tensor([1.0, 0.0, 0.0, 1.0])
    sprites = torch.full((1, spec.MAX_SPRITES, 3), -1)
    sprites[0, 0] = torch.tensor([0, 10, 6])  # world frame pixels
    origin = 12 + scaled(np.array([[3, 5]]))  # offset (3, 5)
    n = out_side() // 4 + 1
    (rows, vals), cover = paste_layer(sprites, table, None, origin, spec.WINDOW, n)
    alpha = torch.zeros(n * n * 16).index_put_((rows,), vals[:, 3])
    cells = alpha.view(n, n, 4, 4).permute(0, 2, 1, 3).reshape(4 * n, 4 * n)
    ys, xs = torch.nonzero(cells, as_tuple=True)
    r0 = origin[0] // 4 * 4  # the region starts at this window pixel
    assert (xs.min().item() + r0[0], ys.min().item() + r0[1]) == (
        origin[0, 0] + 15,
        origin[0, 1] + 9,
    )
    assert xs.max() - xs.min() == 11 and ys.max() - ys.min() == 11
    assert cover.sum().item() == pytest.approx(144 / 16)


def test_a_things_table_is_drawn_as_resampled_and_resampled_once_per_table(decoder):
    rng = np.random.default_rng(0)
    table = torch.from_numpy(rng.random((3, 16, 16, 4), dtype=np.float32))
    first = decoder.things_table(table)
    assert first.shape == (3, 24, 24, 4)
    assert torch.equal(first, resample_sprites(table, 24))
    assert decoder.things_table(table) is first  # the same table: kept
    grown = torch.cat([table, table[:1]])  # a concept drawn for the first time: a new table
    again = decoder.things_table(grown)
    assert again is not first and torch.equal(again[:3], first)
    # while training (not frozen) nothing is kept: the table may change in place
    fresh = FrameDecoder()
    assert fresh.things_table(table) is not fresh.things_table(table)


def test_each_cell_takes_its_tiles_texture_and_what_the_tile_in_front_adds():
    """A cell's texture row is its tile's token and its place in the tile (the snowy twin in
    snow), plus what the tile below it (in front, in the three-quarter view: a tall one stands
    up into the tile behind) adds at that place."""
    k, w, tall = spec.RENDER_TOKENS, 5, 7
    rows = torch.arange(2 * k * 9, dtype=torch.float32)
    own = rows[:, None].expand(-1, 48).contiguous()  # a row's value: its own index
    behind = torch.zeros(2 * k * 9, 48)
    for snowy in (0, k):
        behind[(tall + snowy) * 9 + 6 : (tall + snowy) * 9 + 9] = 1000.0  # its lower third
    tokens = torch.zeros(2, w, w, dtype=torch.long)
    tokens[:, 2, 1] = tall
    weather = torch.tensor([0, SNOW])
    n = 3 * w - 1
    tex = texture(tokens, weather, np.array([[0, 0], [0, 0]]), n, own, behind)
    cells = tex[..., 0].view(2, n, n, 16)[..., 0]  # (frame, cell row, cell column)
    for f, snowy in ((0, 0), (1, k)):
        assert cells[f, 0, 0] == (0 + snowy) * 9  # token 0, first cell
        assert cells[f, 1, 5] == (0 + snowy) * 9 + 3 + 2  # cell (1, 2) of tile (0, 1)
        assert cells[f, 6, 3] == (tall + snowy) * 9  # the tall tile's own first cell
        assert cells[f, 3, 4] == (0 + snowy) * 9 + 1  # top row of the tile behind: its own
        for col in (3, 4, 5):  # its bottom row: the tall one stands up into it
            assert cells[f, 5, col] == (0 + snowy) * 9 + 6 + col - 3 + 1000
        assert cells[f, 5, 6] == (0 + snowy) * 9 + 6  # beside it: nothing in front


def test_fresh_weights_draw_when_none_are_shipped(tmp_path, caplog):
    fresh = FrameDecoder.load_or_fresh(tmp_path)
    out = fresh.frames(*tensors(scenes(1)))
    assert out.shape == (1, 192, 192, 3)
    assert "no frame decoder weights" in caplog.text
