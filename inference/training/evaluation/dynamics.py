"""The learned dynamics against the teacher on unseen seeds.

    python -m inference.training.evaluation.dynamics          # test split: weights/dynamics_eval.*
    python -m inference.training.evaluation.dynamics --split validation   # tuning: prints

- tiles: per process, a canvas of 6 x 6 chunks run 10 s (40 ticks) and 60 s (240 ticks) by the
  teacher and by the model from the same start with the same uniforms; the share of tiles whose
  (token, cover) agree, on the tiles the process could touch and overall, beside the share a
  world that never changed would get (the start against the teacher).
- burnt area: tiles burning or burnt 30 s after a fire starts in a green world, model vs teacher.
- creatures: where creatures are over 60 s among a fire, water and a standing player, as
  distributions (habitat, distance to fire, water, the player), model vs teacher and the old
  seeded wanderer (`spec.creature_dir`) vs teacher, beside the teacher against itself with other
  uniforms (the floor a perfect policy would reach).
Seeds: validation and test are disjoint halves of the unseen seeds (>= TRAIN_SEED_LIMIT); only
the validation split is looked at to choose settings.
"""

from __future__ import annotations

import argparse
import copy
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from inference.training.simulator import TRAIN_SEED_LIMIT
from inference.training.simulator.dynamics import (
    AQUATIC,
    FLAMMABLE,
    HUNTERS,
    PUDDLING,
    SHY,
    SNOWABLE,
    WATER,
    Canvas,
    Teacher,
)
from inference.world import spec
from inference.world.dynamics import ASH, FIRE, LAVA, WEIGHTS, Dynamics, blocks_movement

SPLITS = {
    "validation": (TRAIN_SEED_LIMIT, TRAIN_SEED_LIMIT + 2**20),
    "test": (TRAIN_SEED_LIMIT + 2**20, 2 * TRAIN_SEED_LIMIT),
}
SHORT, LONG, BURN = 40, 240, 120  # ticks: 10 s, 60 s, 30 s
CHUNKS = (6, 6)
_B = {name: i for i, name in enumerate(spec.BIOMES)}
_W = {name: i for i, name in enumerate(spec.WEATHERS)}
GREEN = [_B[b] for b in ("meadow", "forest", "autumn", "blossom", "jungle")]
WET = [
    _B[b] for b in ("meadow", "forest", "desert", "beach", "swamp", "canyon", "autumn", "jungle")
]
DAY, NIGHT = spec.TIME_MINUTES[1], spec.TIME_MINUTES[3]


def _canvas(rng, seeds, biomes, **kw) -> Canvas:
    seed = int(rng.integers(*seeds))
    origin = tuple(int(v) * spec.CHUNK for v in rng.integers(-30, 30, 2))
    return Canvas.of_world(seed, int(rng.choice(biomes)), CHUNKS, origin=origin, **kw)


def ignite(canvas: Canvas, rng, n: int = 3) -> None:
    """Light `n` flammable tiles near the canvas centre."""
    h, w = canvas.tokens.shape
    cy, cx = np.mgrid[0:h, 0:w]
    near = (abs(cy - h // 2) < 6) & (abs(cx - w // 2) < 6) & (FLAMMABLE[canvas.tokens] > 0)
    picks = np.flatnonzero(near)
    for i in rng.choice(picks, min(n, len(picks)), replace=False):
        canvas.cover.flat[i] = FIRE


def run(canvas: Canvas, dynamics, ticks: int, creatures=None) -> Canvas:
    canvas = copy.deepcopy(canvas)
    for _ in range(ticks):
        canvas.step(dynamics, creatures)
    return canvas


# Each scenario: (rng, seeds) -> (start canvas, the tiles the process could touch).
def fire(rng, seeds) -> tuple[Canvas, np.ndarray]:
    c = _canvas(rng, seeds, GREEN, minute=int(rng.choice([DAY, NIGHT])))
    ignite(c, rng)
    return c, FLAMMABLE[c.tokens] > 0


def fire_in_rain(rng, seeds) -> tuple[Canvas, np.ndarray]:
    c, touch = fire(rng, seeds)
    c = run(c, Teacher(), 40)
    return replace(c, weather=_W[str(rng.choice(["rain", "thunderstorm"]))]), touch


def puddles(rng, seeds) -> tuple[Canvas, np.ndarray]:
    c = _canvas(rng, seeds, WET, weather=_W[str(rng.choice(["rain", "thunderstorm"]))])
    return c, PUDDLING[c.tokens] > 0


def drying(rng, seeds) -> tuple[Canvas, np.ndarray]:
    c, touch = puddles(rng, seeds)
    c = run(c, Teacher(), 200)
    return replace(c, weather=_W["clear"], minute=int(rng.choice([DAY, NIGHT]))), touch


def snow(rng, seeds) -> tuple[Canvas, np.ndarray]:
    c = _canvas(rng, seeds, list(range(len(spec.BIOMES))), weather=_W["snow"])
    return c, SNOWABLE[c.tokens] > 0


def melting(rng, seeds) -> tuple[Canvas, np.ndarray]:
    c, touch = snow(rng, seeds)
    c = run(c, Teacher(), 240)
    return replace(c, weather=_W["clear"], minute=int(rng.choice([DAY, NIGHT]))), touch


def regrowth(rng, seeds) -> tuple[Canvas, np.ndarray]:
    c, _ = fire(rng, seeds)
    c = run(c, Teacher(), 240)
    return c, c.cover == ASH


def lava(rng, seeds) -> tuple[Canvas, np.ndarray]:
    c = _canvas(rng, seeds, list(range(len(spec.BIOMES))), weather=int(rng.choice([0, 1])))
    h, w = c.tokens.shape
    for _ in range(3):
        x, y = rng.integers(6, w - 6), rng.integers(6, h - 6)
        for dx, dy in spec.PLACE_SHAPES["lava_pool"]:
            c.tokens[y + dy, x + dx] = LAVA
    pools = c.tokens == LAVA
    near = pools.copy()
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            near |= np.roll(np.roll(pools, dy, 0), dx, 1)
    return c, near


SCENARIOS = {
    "fire": fire,
    "fire_in_rain": fire_in_rain,
    "puddles": puddles,
    "drying": drying,
    "snow": snow,
    "melting": melting,
    "regrowth": regrowth,
    "lava": lava,
}


def _agree(a: Canvas, b: Canvas) -> np.ndarray:
    return (a.tokens == b.tokens) & (a.cover == b.cover)


def tile_accuracy(model, runs: int, seeds, rng) -> dict:
    out = {}
    for name, make in tqdm(SCENARIOS.items(), desc="tiles", leave=False):
        rows: dict[str, list[int]] = {}
        for _ in range(runs):
            start, touch = make(rng, seeds)
            teacher, learned = copy.deepcopy(start), copy.deepcopy(start)
            for tick in range(1, LONG + 1):
                teacher.step(Teacher())
                learned.step(model)
                if tick in (SHORT, LONG):  # tiles pooled over the runs (one may touch none)
                    same, still = _agree(teacher, learned), _agree(teacher, start)
                    for key, hits in (
                        ("touched", same[touch]),
                        ("all", same),
                        ("static", still[touch]),
                    ):
                        agree, total = rows.setdefault(f"{key}_{tick}", [0, 0])
                        rows[f"{key}_{tick}"] = [agree + int(hits.sum()), total + hits.size]
        out[name] = {k: round(100 * a / max(n, 1), 2) for k, (a, n) in rows.items()}
    return out


def burnt_area(model, runs: int, seeds, rng) -> dict:
    teacher, learned = [], []
    for _ in tqdm(range(runs), desc="burnt", leave=False):
        start, _ = fire(rng, seeds)
        for dyn, into in ((Teacher(), teacher), (model, learned)):
            end = run(start, dyn, BURN)
            into.append(int(np.isin(end.cover, (FIRE, ASH)).sum()))
    t, m = np.array(teacher, float), np.array(learned, float)
    return {
        "teacher_mean": round(t.mean(), 1),
        "model_mean": round(m.mean(), 1),
        "error_pct": round(100 * abs(m.mean() - t.mean()) / max(t.mean(), 1), 2),
        "median_run_error_pct": round(100 * float(np.median(abs(m - t) / np.maximum(t, 1))), 2),
        "runs": runs,
    }


# ---------------------------------------------------------------- creatures


class _OtherDraws:
    """The teacher's policy drawn with other uniforms: how far two draws of one policy differ."""

    def creatures(self, batch):
        return Teacher().creatures(replace(batch, ident=np.asarray(batch.ident) + 10**6))


def _nearest(mask: np.ndarray, tx: np.ndarray, ty: np.ndarray, cap: float) -> np.ndarray:
    ys, xs = np.nonzero(mask)
    if len(xs) == 0:
        return np.full(len(tx), cap)
    d = np.hypot(xs[None, :] - tx[:, None], ys[None, :] - ty[:, None]).min(1)
    return np.minimum(d, cap)


def creature_world(rng, seeds) -> Canvas:
    """A green world with water, a fire lit, a player standing, twelve creatures about."""
    for _ in range(50):
        c = _canvas(rng, seeds, GREEN + [_B["swamp"]])
        if 0.03 < WATER[c.tokens].mean() < 0.4:
            break
    h, w = c.tokens.shape
    free = ~blocks_movement(c.tokens, c.cover)
    cells = np.argwhere(free[8:-8, 8:-8]) + 8
    py, px = cells[rng.integers(len(cells))]
    c.player = (int(px) * spec.TILE + 4, int(py) * spec.TILE + 4)
    burnable = np.argwhere(FLAMMABLE[c.tokens] > 0)
    far = burnable[np.hypot(*(burnable - (py, px)).T) > 8]
    if len(far):
        fy, fx = far[rng.integers(len(far))]
        c.cover[fy, fx] = FIRE
    near = cells[np.hypot(*(cells - (py, px)).T) < 14]
    picks = near[rng.choice(len(near), min(12, len(near)), replace=False)]
    kinds = rng.integers(0, len(spec.CREATURES), len(picks))
    c.creatures = np.array(
        [
            [
                k,
                x * spec.TILE + c.origin[0] * spec.TILE + 4,
                y * spec.TILE + c.origin[1] * spec.TILE + 4,
                i,
            ]
            for i, (k, (y, x)) in enumerate(zip(kinds, picks, strict=True))
        ],
        dtype=np.int64,
    ).reshape(-1, 4)
    c.player = (c.player[0] + c.origin[0] * spec.TILE, c.player[1] + c.origin[1] * spec.TILE)
    return c


def _positions(canvas: Canvas) -> dict[str, np.ndarray]:
    kind, x, y, _ = canvas.creatures.T
    tx, ty = x // spec.TILE - canvas.origin[0], y // spec.TILE - canvas.origin[1]
    px = canvas.player[0] // spec.TILE - canvas.origin[0]
    py = canvas.player[1] // spec.TILE - canvas.origin[1]
    return {
        "kind": kind,
        "fire": _nearest(canvas.cover == FIRE, tx, ty, 16.0),
        "water": _nearest(WATER[canvas.tokens], tx, ty, 16.0),
        "player": np.minimum(np.hypot(tx - px, ty - py), 32.0),
    }


def _w1(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import wasserstein_distance

    return float(wasserstein_distance(a, b)) if len(a) and len(b) else float("nan")


def _tv(a: np.ndarray, b: np.ndarray) -> float:
    if not (len(a) and len(b)):
        return float("nan")
    edges = np.arange(0, 34)
    ha, _ = np.histogram(a, edges)
    hb, _ = np.histogram(b, edges)
    return float(0.5 * np.abs(ha / len(a) - hb / len(b)).sum())


def creature_positions(model, runs: int, seeds, rng) -> dict:
    policies = {
        "teacher": None,
        "model": model,
        "wanderer": "wanderer",
        "teacher_redrawn": _OtherDraws(),
    }
    samples: dict[str, list] = {p: [] for p in policies}
    for _ in tqdm(range(runs), desc="creatures", leave=False):
        start = creature_world(rng, seeds)
        for name, policy in policies.items():
            c = copy.deepcopy(start)
            for tick in range(1, LONG + 1):
                c.step(Teacher(), Teacher() if policy is None else policy)
                if tick % 8 == 0:
                    samples[name].append(_positions(c))
    data = {p: {k: np.concatenate([s[k] for s in v]) for k in v[0]} for p, v in samples.items()}
    groups = {
        "aquatic, to water": ("water", AQUATIC),
        "land, to water": ("water", ~AQUATIC),
        "all, to fire": ("fire", np.ones(len(spec.CREATURES), bool)),
        "wolf/bear, to player": ("player", HUNTERS),
        "shy, to player": ("player", SHY),
    }
    out = {}
    for label, (measure, kinds) in groups.items():
        pick = {p: d[measure][kinds[d["kind"]]] for p, d in data.items()}
        t = pick["teacher"]
        row = {f"mean_{p}": round(float(v.mean()), 2) for p, v in pick.items()}
        for p in ("model", "wanderer", "teacher_redrawn"):
            row[f"w1_{p}"] = round(_w1(pick[p], t), 3)
            row[f"tv_{p}"] = round(_tv(pick[p], t), 3)
        out[label] = row
    habitat = {p: float((d["water"][AQUATIC[d["kind"]]] <= 2).mean()) for p, d in data.items()}
    near_fire = {p: float((d["fire"] <= 2).mean()) for p, d in data.items()}
    out["aquatic within 2 tiles of water (share)"] = {
        f"mean_{p}": round(v, 3) for p, v in habitat.items()
    }
    out["within 2 tiles of fire (share)"] = {f"mean_{p}": round(v, 3) for p, v in near_fire.items()}
    return out


# ---------------------------------------------------------------- report


def evaluate(model, split: str, runs: int, seed: int = 0) -> dict:
    seeds = SPLITS[split]
    rng = np.random.default_rng(seed)
    return {
        "split": split,
        "seeds": list(seeds),
        "runs_per_scenario": runs,
        "tiles": tile_accuracy(model, runs, seeds, rng),
        "burnt_area_30s": burnt_area(model, 2 * runs, seeds, rng),
        "creatures": creature_positions(model, runs, seeds, rng),
    }


def markdown(report: dict) -> str:
    lines = [
        "# Learned dynamics vs the teacher",
        "",
        f"Split `{report['split']}` (seeds {report['seeds'][0]}..{report['seeds'][1]}), "
        f"{report['runs_per_scenario']} runs per scenario on a canvas of 6 x 6 chunks. "
        "`python -m inference.training.evaluation.dynamics` writes this file.",
        "",
        "## Tile agreement with the teacher (same start, same uniforms), %",
        "",
        "Touched: the tiles the process could change; static: a world that never changed.",
        "",
        "| process | touched 10 s | all 10 s | static 10 s | touched 60 s | all 60 s "
        "| static 60 s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in report["tiles"].items():
        cells = [r[f"{k}_{t}"] for t in (SHORT, LONG) for k in ("touched", "all", "static")]
        lines.append(f"| {name} | " + " | ".join(f"{v:.1f}" for v in cells) + " |")
    b = report["burnt_area_30s"]
    lines += [
        "",
        "## Burnt area 30 s after a fire starts (tiles burning or burnt)",
        "",
        "| teacher | model | error of the means | median error per run | runs |",
        "|---|---|---|---|---|",
        f"| {b['teacher_mean']} | {b['model_mean']} | {b['error_pct']}% | "
        f"{b['median_run_error_pct']}% | {b['runs']} |",
        "",
        "## Creature positions over 60 s (distances in tiles)",
        "",
        "W1: Wasserstein-1 distance to the teacher's distribution (tiles); TV: total variation on "
        "1-tile bins. `teacher_redrawn`: the teacher with other uniforms (the floor).",
        "",
        "| measure | teacher | model | wanderer | W1 model | W1 wanderer | W1 floor | TV model "
        "| TV wanderer | TV floor |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in report["creatures"].items():
        if "w1_model" not in r:
            continue
        vals = [r["mean_teacher"], r["mean_model"], r["mean_wanderer"]]
        vals += [r[f"w1_{p}"] for p in ("model", "wanderer", "teacher_redrawn")]
        vals += [r[f"tv_{p}"] for p in ("model", "wanderer", "teacher_redrawn")]
        lines.append(f"| {label} | " + " | ".join(f"{v}" for v in vals) + " |")
    lines += [
        "",
        "| share | teacher | model | wanderer | teacher redrawn |",
        "|---|---|---|---|---|",
    ]
    for label, r in report["creatures"].items():
        if "w1_model" in r:
            continue
        keys = ("teacher", "model", "wanderer", "teacher_redrawn")
        lines.append(f"| {label} | " + " | ".join(str(r[f"mean_{k}"]) for k in keys) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description="Evaluate the learned dynamics against the teacher."
    )
    parser.add_argument("--weights", default=str(WEIGHTS))
    parser.add_argument("--split", choices=tuple(SPLITS), default="test")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--out", help="where to write .md and .json (default: beside the weights, test split only)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    report = evaluate(Dynamics.load(args.weights), args.split, args.runs)
    print(json.dumps(report, indent=1))
    out = args.out or (
        str(Path(args.weights).with_name("dynamics_eval")) if args.split == "test" else None
    )
    if out:
        Path(out + ".json").write_text(json.dumps(report, indent=1) + "\n")
        Path(out + ".md").write_text(markdown(report))
        print(f"wrote {out}.md and {out}.json")


if __name__ == "__main__":
    main()
