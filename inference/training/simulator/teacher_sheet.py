"""A contact sheet of the rich teacher: the same few places over a day and in weather, and the
flat `render` beside them, to judge it by eye.

    python -m inference.training.simulator.teacher_sheet [--sheet var/teacher_sheet.png]
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from inference.training.simulator.teacher import out_side, render_rich
from inference.training.simulator.world import Scene, render, terrain_tokens
from inference.world import spec

W = spec.WINDOW
COLUMNS = (  # (label, minute, weather)
    ("07:00", 7 * 60, "clear"),
    ("12:00", 12 * 60, "clear"),
    ("16:30", 16 * 60 + 30, "clear"),
    ("18:30", 18 * 60 + 30, "clear"),
    ("23:00", 23 * 60, "clear"),
    ("12:00 rain", 12 * 60, "rain"),
    ("12:00 snow", 12 * 60, "snow"),
)
_THING = {name: i for i, name in enumerate(spec.THINGS)}
_COVER = {name: spec.FIRST_COVER_TOKEN - 1 + i for i, name in enumerate(spec.COVERS) if i}


def lantern() -> np.ndarray:
    """A made-up 16x16 RGBA open-vocabulary thing: a lantern on a post."""
    s = np.zeros((16, 16, 4), np.float32)
    s[6:16, 7:9] = (0.3, 0.22, 0.15, 1)  # the post
    s[1:7, 5:11] = (0.2, 0.2, 0.22, 1)  # the frame
    s[2:6, 6:10] = (1.0, 0.85, 0.4, 1)  # the flame behind glass
    s[0, 6:10] = (0.2, 0.2, 0.22, 1)
    return s


def _disc(tok, cx, cy, r, value) -> None:
    yy, xx = np.mgrid[0:W, 0:W]
    tok[(xx - cx) ** 2 + (yy - cy) ** 2 <= r * r] = value


def _terrain(seed: int, biome: str) -> np.ndarray:
    ty, tx = np.mgrid[0:W, 0:W] + 40
    tok = terrain_tokens(seed, spec.BIOMES.index(biome), tx, ty)
    b = spec.BIOMES.index(biome)
    tok[tok % 4 >= 2] = spec.token_of(b, 0)  # the features are placed by hand below
    return tok


def places() -> list[tuple[str, np.ndarray, list, list]]:
    """(name, tokens (W, W), sprites [(kind, x, y)], things [(row, x, y, light)])."""
    t = spec.token_of
    fox, deer, crab = (
        spec.AVATAR_COLORS + spec.CREATURES.index(c) for c in ("fox", "deer", "crab")
    )
    m = spec.BIOMES.index("meadow")
    meadow = _terrain(3, "meadow")
    _disc(meadow, 12, 11, 2.3, t(m, 3))
    for x, y in ((4, 4), (5, 5), (3, 7), (14, 4), (15, 5), (7, 14), (16, 15), (9, 3), (4, 12)):
        meadow[y, x] = t(m, 2)
    village = _terrain(5, "meadow")
    village[9, :] = spec.thing_token(_THING["path"])
    village[:, 9] = spec.thing_token(_THING["path"])
    for cx, cy in ((5, 5), (13, 5), (5, 13)):
        village[cy - 1 : cy + 2, cx - 1 : cx + 2] = spec.thing_token(_THING["house"])
    village[13, 12] = spec.thing_token(_THING["well"])
    village[12, 14] = spec.thing_token(_THING["campfire"])
    village[11:16, 16] = spec.thing_token(_THING["fence"])
    village[15, 12] = village[16, 13] = spec.thing_token(_THING["trees"])
    v = spec.BIOMES.index("volcanic")
    volcano = _terrain(11, "volcanic")
    _disc(volcano, 6, 12, 2.5, t(v, 3))
    _disc(volcano, 14, 5, 1.6, spec.thing_token(_THING["lava_pool"]))
    for x, y in ((11, 11), (12, 12), (3, 4), (16, 13), (9, 6)):
        volcano[y, x] = t(v, 2)
    volcano[14:16, 12:15] = _COVER["fire"]
    volcano[16, 12:15] = _COVER["ash"]
    bch = spec.BIOMES.index("beach")
    beach = _terrain(7, "beach")
    yy, xx = np.mgrid[0:W, 0:W]
    beach[yy > 12 + 1.5 * np.sin(xx / 3)] = t(bch, 3)
    for x, y in ((4, 6), (13, 8), (15, 7)):
        beach[y, x] = t(bch, 2)
    beach[6:8, 10:12] = spec.thing_token(_THING["tent"])
    return [
        ("meadow", meadow, [(fox, 52, 84), (deer, 90, 40)], [(0, 40, 36, True)]),
        ("village", village, [(0, 64, 74), (1, 84, 66)], [(0, 44, 66, True)]),
        ("volcanic", volcano, [(spec.AVATAR_COLORS + 11, 80, 40)], []),
        ("beach", beach, [(crab, 60, 86), (0, 70, 62)], [(0, 108, 30, True)]),
    ]


def scene_of(tokens, sprites, things, minute: int, weather: str, offset=(3, 5)) -> tuple:
    """One place as a one-frame scene and its open-vocabulary layer."""
    spr = np.full((1, spec.MAX_SPRITES, 3), -1)
    spr[0, : len(sprites)] = sprites
    slots = np.full((1, 4, 3), -1)
    lights = np.full((1, 4, 2), -1)
    for i, (row, x, y, light) in enumerate(things):
        slots[0, i] = (row, x, y)
        if light:
            lights[0, i] = (x + 8, y + 4)
    scene = Scene(
        tokens=tokens[None],
        offset=np.array([offset]),
        weather=np.array([spec.WEATHERS.index(weather)]),
        minute=np.array([minute]),
        phase=np.array([[5, 9]]),
        sprites=spr,
    )
    return scene, (slots, lantern()[None], lights)


def contact_sheet(path: str) -> None:
    f = out_side(spec.FRAME)
    pad, head = 6, 18
    cols = len(COLUMNS) + 1
    rows = places()
    sheet = Image.new("RGB", (cols * (f + pad) + pad, len(rows) * (f + pad) + head + pad), "white")
    draw = ImageDraw.Draw(sheet)
    for c, (label, _, _) in enumerate((*COLUMNS, ("old render, 12:00", 0, 0))):
        draw.text((pad + c * (f + pad), 4), label, fill="black")
    for r, (_, tokens, sprites, things) in enumerate(rows):
        y = head + r * (f + pad)
        for c, (_, minute, weather) in enumerate(COLUMNS):
            scene, layer = scene_of(tokens, sprites, things, minute, weather)
            img = Image.fromarray(render_rich(scene, layer)[0])
            sheet.paste(img, (pad + c * (f + pad), y))
        scene, _ = scene_of(tokens, sprites, things, 12 * 60, "clear")
        old = Image.fromarray(render(scene)[0]).resize((f, f), Image.NEAREST)
        sheet.paste(old, (pad + len(COLUMNS) * (f + pad), y))
    sheet.save(path)


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description="Draw the rich teacher's contact sheet.")
    parser.add_argument("--sheet", default="var/teacher_sheet.png", help="PNG to write")
    args = parser.parse_args(argv)
    contact_sheet(args.sheet)


if __name__ == "__main__":
    main()
