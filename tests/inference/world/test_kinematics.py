"""Movement rules shared by the simulator and the engine: blocked axes, sliding round corners."""

from inference.world import spec


def _solid_tiles(*tiles):
    blocked = set(tiles)
    return lambda tx, ty: (tx, ty) in blocked


def test_open_ground_moves_at_full_speed_on_both_axes():
    assert spec.move(0, 0, 1, 1, spec.PLAYER_SPEED, _solid_tiles()) == (2, 2)


def test_a_wall_head_on_stops_the_avatar():
    wall = _solid_tiles(*[(1, ty) for ty in range(-5, 6)])  # a long wall at tile x = 1
    assert spec.move(4, 4, 1, 0, spec.PLAYER_SPEED, wall) == (4, 4)


def test_held_into_a_rocks_corner_the_avatar_slides_round_it():
    rock = _solid_tiles((1, 0))  # one tile: x 8..15, y 0..7
    # The box (half-size 3) at y = 10 spans y 7..12: its top pixel row clips the rock.
    x, y = 4, 10
    for _ in range(4):
        x, y = spec.move(x, y, 1, 0, spec.PLAYER_SPEED, rock)
    assert y > 10  # slid down, away from the rock
    for _ in range(4):
        x, y = spec.move(x, y, 1, 0, spec.PLAYER_SPEED, rock)
    assert x > 8  # and then past it, instead of stopping dead at its edge


def test_sliding_never_enters_a_solid_tile():
    rocks = _solid_tiles((1, 0), (0, 2), (1, 2))
    x, y = 4, 10
    for _ in range(20):
        x, y = spec.move(x, y, 1, 0, spec.PLAYER_SPEED, rocks)
        assert not any(rocks(tx, ty) for tx, ty in spec.box_tiles(x, y))
