"""The renderer's sprite layers and pools of light, on hand-made tables: what is drawn on top,
what stays outside the frame, and how overlapping lights add up."""

import torch

from inference.world.model import GLOW_PX, GLOW_RGB, Renderer

F, PAD = 16, 4  # a 16-pixel frame inside a 24-pixel image, offset by PAD


def _table(*colours: float, side: int) -> torch.Tensor:
    """(K, side * side, 4) solid sprites of one grey each, alpha 1."""
    rows = [torch.tensor([c, c, c, 1.0]).expand(side * side, 4) for c in colours]
    return torch.stack(rows)


def _slots(*rows: tuple[int, int, int], m: int = 4) -> torch.Tensor:
    out = torch.full((1, m, 3), -1, dtype=torch.long)
    for i, row in enumerate(rows):
        out[0, i] = torch.tensor(row)
    return out


def _image() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.zeros(1, F + 2 * PAD, F + 2 * PAD, 3), torch.tensor([[PAD, PAD]])


def test_the_top_layer_then_the_highest_slot_wins_where_sprites_overlap():
    img, offset = _image()
    under = (_slots((0, 0, 0), (1, 2, 2)), _table(0.1, 0.2, side=4), 4)
    over = (_slots((0, 3, 3)), _table(0.9, side=2), 2)
    Renderer._composite(img, [under, over], offset, F)
    at = img[0, PAD:, PAD:, 0]
    assert at[0, 0] == 0.1  # the first slot alone
    assert at[2, 2] == 0.2  # the second slot over the first
    assert at[3, 3] == 0.9 and at[4, 4] == 0.9  # the top layer over both
    assert at[5, 5] == 0.2  # where the top layer ends, the slot under shows again
    # the same layers the other way round: the bottom one now covers the small sprite
    img2, _ = _image()
    Renderer._composite(img2, [over, under], offset, F)
    assert img2[0, PAD + 3, PAD + 3, 0] == 0.2


def test_what_falls_outside_the_frame_or_is_transparent_is_not_drawn():
    img, offset = _image()
    table = _table(0.5, side=4)
    table[0, 5, 3] = 0.0  # one transparent pixel: row 1, column 1
    Renderer._composite(img, [(_slots((0, -2, -2), (0, 14, 14)), table, 4)], offset, F)
    drawn = img[0, ..., 0] > 0
    # only the parts inside the frame: 2x2 at the top left corner, 2x2 at the bottom right
    assert drawn.sum() == 4 + 4 - 1
    assert drawn[PAD : PAD + 2, PAD : PAD + 2].sum() == 4
    assert not drawn[PAD + F - 1, PAD + F - 1]  # the transparent pixel, moved to (15, 15)
    assert not drawn[:PAD].any() and not drawn[:, :PAD].any()


def test_a_pool_of_light_peaks_at_its_light_and_overlapping_pools_are_capped():
    frame = torch.zeros(2, 64, 64, 3)
    lights = torch.full((2, 8, 2), -1)
    lights[0, 0] = torch.tensor([20, 30])
    lights[1, :4] = torch.tensor([40, 40])  # four lights on one spot
    night = torch.zeros(2, 3)  # no daylight at all
    Renderer._glow(frame, lights, night, 1.0)
    one, many = frame[0], frame[1]
    warm = torch.tensor(GLOW_RGB) / 255.0
    assert torch.allclose(one[30, 20], warm, atol=1e-5)  # at the light: its whole colour
    falloff = float(torch.exp(torch.tensor(-(10.0**2) / (2 * GLOW_PX**2))))
    assert torch.allclose(one[30, 30], warm * falloff, atol=1e-5)  # 10 pixels away
    assert torch.allclose(many[40, 40], 1.5 * warm, atol=1e-5)  # capped, not four times
    day = torch.ones(2, 3)
    lit = torch.zeros(2, 64, 64, 3)
    Renderer._glow(lit, lights, day, 1.0)
    assert lit.abs().max() == 0  # nothing by day
