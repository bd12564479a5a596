"""Driving the engine: worlds opened from prompts, players walked, the scene a player stands in."""

from __future__ import annotations

import numpy as np

from inference.training import simulator as sim
from inference.training.evaluation.measures import EVAL_SEEDS, MOVES, SPLIT, STILL
from inference.world import spec


def unseen_seed(rng) -> int:
    return int(rng.integers(*EVAL_SEEDS))


def clear_prompt(rng) -> str:
    noun = rng.choice(sum(sim.phrasing.BIOME_NOUNS.values(), []))
    return f"a {noun} on a sunny day"


def random_keys(rng) -> frozenset:
    return MOVES[rng.integers(len(MOVES))] if rng.random() < 0.8 else STILL


def chunks(total: int, size: int) -> list[int]:
    return [size] * (total // size) + ([total % size] if total % size else [])


def rollout(engine, pids, rng, frames: int, keep=(), chunk: int = 16) -> dict[int, dict]:
    """Random-action rollout of several players together. -> {frames done: {pid: frame}} at
    each count in `keep` and at the end."""
    marks = sorted({*keep, frames})
    out, done = {}, 0
    keys = {pid: random_keys(rng) for pid in pids}
    while done < frames:
        n = min(chunk, next(m for m in marks if m > done) - done)
        if rng.random() < 0.5:
            keys = {pid: random_keys(rng) for pid in pids}
        step = engine.step(keys, {pid: n for pid in pids})
        done += n
        if done in marks:
            out[done] = {pid: v[-1] for pid, v in step.items()}
    return out


def stand(engine, pids, n: int = 1) -> dict[str, np.ndarray]:
    """Everyone stands still for n frames; -> each one's last frame."""
    out = engine.step(dict.fromkeys(pids, STILL), dict.fromkeys(pids, n))
    return {p: v[-1] for p, v in out.items()}


def stratified_prompts(rng, n: int, mixed: bool | None = None) -> list[tuple[str, dict]]:
    """n eval-split world prompts; the i-th names biome i % 16 first and atmosphere i % 9, so
    every biome and atmosphere is asked for about equally often (times and creatures as the
    phrasing draws them; a second biome too unless `mixed` says)."""
    out = []
    for i in range(n):
        want = (i % len(spec.BIOMES), i % len(spec.WEATHERS))
        while True:
            text, labels = sim.world_prompt(rng, SPLIT)
            two = labels["biome2"] >= 0
            if (labels["biome"], labels["weather"]) == want and mixed in (None, two):
                break
        out.append((text, labels))
    return out


def open_worlds(engine, prompts, rng) -> list[tuple[str, str]]:
    """One world (and one player) per prompt -> [(world id, player id)]."""
    out = []
    for text, _ in prompts:
        wid = engine.create_world(prompt=text, seed=unseen_seed(rng))
        out.append((wid, engine.add_player(wid)))
    return out


def close_worlds(engine, worlds) -> None:
    for wid, _ in worlds:
        engine.drop_world(wid)


def scene_of(engine, wid: str, pid: str) -> sim.Scene:
    """The scene of a player's latest frame as the engine built it, for the simulator to draw
    (the yardstick of what that frame should show)."""
    world = engine.worlds[wid]
    player = next(p for p in world.players if p.player_id == pid)
    # the open-vocabulary things (the scene's last part) are the decoder's, not the simulator's
    tokens, offset, weather, minute, phase, sprites, _things = engine._scene(world, player)
    return sim.Scene(
        tokens=tokens[None],
        offset=np.array([offset]),
        weather=np.array([weather]),
        minute=np.array([minute]),
        phase=np.array([phase]),
        sprites=sprites[None],
    )
