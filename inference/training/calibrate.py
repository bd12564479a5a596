"""Fit the terrain generator's sampling bias so each biome's tile kinds come out in the
simulator's mix (``TerrainGenerator.kind_bias``; training never sees it).

MaskGIT keeps first the draws a chunk is surest of, and those are the ground kinds: even with
its noisier order (``ModelConfig.gen_choice_temp``) the trained generator gave beaches 4% water
where the simulator's have 21%, and every biome too little water and too few obstacles. The
judge and the players learned each biome from the simulator's mix. Each round grows the same
worlds afresh (training-split prompts of one biome, training seeds) and moves every token's
bias by the log-ratio of the simulator's share of its kind to the generated one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from inference.training import simulator as sim
from inference.training.evaluation.prompts import kind_counts, simulator_kind_mix, total_variation
from inference.world import spec
from inference.world.engine import WorldEngine
from inference.world.model import WorldModel

WORLDS = 8  # per biome and round
CHUNKS = 16  # nearest the spawn, per world (about 32 x 32 tiles)
RATE = 0.3  # of the log-ratio moved per round: +0.5 on water took a beach from 8% to 25%
BIAS_MAX = 4.0


def prompts_by_biome(rng, worlds: int) -> dict[int, list[tuple[str, int]]]:
    """Training-split prompts naming one biome, with training seeds: {biome: [(text, seed)]}."""
    out: dict[int, list[tuple[str, int]]] = {b: [] for b in range(len(spec.BIOMES))}
    while any(len(v) < worlds for v in out.values()):
        text, labels = sim.world_prompt(rng, "train")
        b = labels["biome"]
        if labels["biome2"] < 0 and len(out[b]) < worlds:
            out[b].append((text, int(rng.integers(sim.TRAIN_SEED_LIMIT))))
    return out


def generated_mix(engine: WorldEngine, prompts: dict[int, list[tuple[str, int]]]) -> np.ndarray:
    """(biomes, kinds) share of each tile kind in the chunks grown around each world's spawn."""
    opened = {
        b: [engine.create_world(prompt=text, seed=seed) for text, seed in v]
        for b, v in prompts.items()
    }
    for wids in opened.values():
        for wid in wids:
            engine.add_player(wid)
    engine.grow_ahead(max_rounds=CHUNKS, frames=64)
    counts = np.zeros((len(spec.BIOMES), len(spec.TILE_KINDS)))
    for b, wids in opened.items():
        for wid in wids:
            counts[b] += kind_counts(engine.worlds[wid], b)
            engine.drop_world(wid)
    return counts / np.maximum(counts.sum(1, keepdims=True), 1)


def calibrate_kinds(
    out: str, rounds: int, seed: int = 0, extra: dict | None = None, worlds: int = WORLDS
) -> dict:
    """Fit ``kind_bias`` of the exported weights in ``out`` over ``rounds`` rounds and save it
    (``extra``: metadata to keep; ``worlds`` per biome and round).
    -> {"before": mean total variation, "after": ..., per biome}, on the fitting draws."""
    torch.set_num_threads(2)
    path = Path(out) / "world_model.safetensors"
    model = WorldModel.from_file(path)
    engine = WorldEngine(model)
    k = len(spec.TILE_KINDS)
    ref = np.stack(
        [simulator_kind_mix(b, first_seed=seed, worlds=worlds) for b in range(len(spec.BIOMES))]
    )
    prompts = prompts_by_biome(np.random.default_rng(seed + 77), worlds)
    model.generator.kind_bias.zero_()  # a fresh fit, whatever the weights held
    bias = torch.zeros(len(spec.BIOMES), k)
    gen = generated_mix(engine, prompts)
    before = total_variation(gen, ref)
    bar = tqdm(range(rounds), desc="calibrate tile kinds")
    for _ in bar:
        step = np.log(ref + 1e-3) - np.log(gen + 1e-3)
        bias = (bias + RATE * torch.from_numpy(step).float()).clamp(-BIAS_MAX, BIAS_MAX)
        model.generator.kind_bias[: spec.BIOME_TOKENS] = bias.flatten()
        gen = generated_mix(engine, prompts)
        bar.set_postfix(tv=f"{total_variation(gen, ref).mean():.3f}")
    tv = total_variation(gen, ref)
    model.save(path, extra={**(extra or {}), "kind_calibration_rounds": str(rounds)})
    return {
        "before": round(float(before.mean()), 3),
        "after": round(float(tv.mean()), 3),
        "by_biome": {
            name: [round(float(before[b]), 3), round(float(tv[b]), 3)]
            for b, name in enumerate(spec.BIOMES)
        },
    }
