"""Strips of served frames showing the world evolve by itself: a fire spreading and rain
putting it out, snow settling and melting, creatures fleeing a fire. Each strip is one PNG,
frames left to right, drawn by the engine on the shipped weights exactly as a player sees
them (upscaled 3x, nearest).

    .venv/bin/python -m inference.training.evaluation.strip --out var/screenshots/dynamics
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from inference.world import journal as jn
from inference.world import spec
from inference.world.engine import WorldEngine

SCALE = 3
FIRE = jn.Change(-1, -1, -1, -1, (), "", spec.PROCESSES.index("fire"))


def weather(name: str) -> jn.Change:
    return jn.Change(spec.WEATHERS.index(name), -1, -1, -1, (), "")


def strip(
    engine: WorldEngine, prompt: str, seed: int, plan: list[tuple[float, list[jn.Change], str]]
) -> Image.Image:
    """Frames at the given seconds of play (events applied just before), captioned."""
    wid = engine.create_world(prompt=prompt, seed=seed)
    world = engine.worlds[wid]
    world.objects = []
    pid = engine.add_player(wid)
    frames, t = [], 0
    for second, changes, caption in plan:
        for change in changes:
            engine.apply_change(wid, change)
        while t < int(second * spec.WORLD_FPS):
            n = min(16, int(second * spec.WORLD_FPS) - t)
            out = engine.step({pid: frozenset()}, {pid: n})
            t += n
        if t < int(second * spec.WORLD_FPS) + 1:  # the frame of this moment itself
            out = engine.step({pid: frozenset()}, {pid: 1})
            t += 1
        frames.append((out[pid][-1], f"{second:g} s: {caption}"))
    engine.drop_world(wid)
    side = spec.FRAME * SCALE
    sheet = Image.new("RGB", (side * len(frames) + 8 * (len(frames) - 1), side + 24), "white")
    draw = ImageDraw.Draw(sheet)
    for i, (frame, caption) in enumerate(frames):
        big = Image.fromarray(np.asarray(frame)).resize((side, side), Image.NEAREST)
        sheet.paste(big, (i * (side + 8), 24))
        draw.text((i * (side + 8) + 4, 6), caption, fill="black")
    return sheet


PLANS = {
    "fire_and_rain": (
        "a dry pine forest",
        11,
        [
            (0, [FIRE], "a fire starts"),
            (5, [], "it spreads"),
            (15, [], "through the trees"),
            (25, [weather("rain")], "rain comes"),
            (40, [], "the fire is out"),
            (120, [weather("clear")], "ash, growing back"),
        ],
    ),
    "snow": (
        "a green meadow",
        12,
        [
            (0, [weather("snow")], "snow starts"),
            (10, [], "settling"),
            (30, [], "snowed in"),
            (30.5, [weather("clear")], "the sky clears"),
            (60, [], "melting"),
            (120, [], "melted"),
        ],
    ),
    "creatures_flee": (
        "a meadow where deer graze",
        13,
        [
            (0, [], "deer graze"),
            (1, [FIRE], "a fire starts"),
            (6, [], "they run"),
            (12, [], "away from it"),
        ],
    ),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="var/screenshots/dynamics")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    engine = WorldEngine.load()
    for name, (prompt, seed, plan) in PLANS.items():
        strip(engine, prompt, seed, plan).save(out / f"{name}.png")
        print(out / f"{name}.png")


if __name__ == "__main__":
    main()
