"""6-8. Long runs keep their biome, players sharing a world see the same place, and the speed and
state size of serving."""

from __future__ import annotations

import time

import numpy as np

from inference.training import simulator as sim
from inference.training.evaluation.measures import CENTRE, STILL, Judge, rates
from inference.training.evaluation.prompts import mean_probs, pct
from inference.training.evaluation.rollouts import (
    clear_prompt,
    close_worlds,
    open_worlds,
    random_keys,
    rollout,
    scene_of,
    stand,
    stratified_prompts,
    unseen_seed,
)
from inference.world import spec

# ---------------------------------------------------------------- 6. stability


def long_run(engine, judge: Judge, rng, worlds: int, frames: int) -> tuple[float, dict, dict]:
    """One world per biome, named alone (mixing is prompt adherence's business), walked at
    random for `frames` frames; its biome must still show on the last three frames (100
    apart), and no frame may have collapsed. Extra: how many kept the biome their first frame
    showed (stability whatever the prompt head made of the text) and drifted in the latent."""
    prompts = stratified_prompts(rng, worlds, mixed=False)
    opened = open_worlds(engine, prompts, rng)
    pids = [pid for _, pid in opened]
    start = mean_probs(judge, [stand(engine, pids)], pids)["biome"].argmax(1)
    views = rollout(engine, pids, rng, frames, keep=(frames - 200, frames - 100))
    end = mean_probs(judge, list(views.values()), pids)["biome"].argmax(1)
    by_biome = {b: [] for b in spec.BIOMES}
    hits = []
    for i, (_, labels) in enumerate(prompts):
        hits.append(bool(end[i] == labels["biome"]))
        by_biome[spec.BIOMES[labels["biome"]]].append(hits[-1])
    # is the latent still the prompt's world? (tells a drifting generator from a misjudged view)
    shares = [
        view_share(engine, wid, labels)
        for (wid, _), (_, labels) in zip(opened, prompts, strict=True)
    ]
    # collapse: flat frames (tiny spread) or noise (neighbour differences as big as the spread)
    last = np.stack([views[frames][pid] for pid in pids])
    std = last.reshape(worlds, -1, 3).std(1).mean(1)
    rough = np.abs(np.diff(last.astype(np.float64), axis=2)).mean((1, 2, 3))
    collapsed = int(((std < 4) | (rough > 1.5 * std + 1e-9)).sum())
    close_worlds(engine, opened)
    extra = {
        "frames": frames,
        "collapsed": collapsed,
        "min_std": float(std.min()),
        "kept_first_frame_biome_pct": pct(list(start == end)),
        "named_biome_in_view_pct": 100.0 * float(np.mean(shares)),
        "drifted_worlds": int(sum(share < 0.5 for share in shares)),
    }
    return 100.0 * float(np.mean(hits)), {"long_run_by_biome": rates(by_biome)}, extra


def view_share(engine, wid: str, labels: dict) -> float:
    """Share of the tiles around the first player that belong to the biomes the prompt named
    (placed things and not-yet-generated cells count against)."""
    world = engine.worlds[wid]
    p = world.players[0]
    tx0, ty0, _, _ = sim.window_origin(p.x, p.y)
    tokens = world.region(tx0, ty0, spec.WINDOW, spec.WINDOW)
    named = [b for b in (labels["biome"], labels["biome2"]) if b >= 0]
    biome = np.where(tokens < spec.BIOME_TOKENS, tokens // len(spec.TILE_KINDS), -1)
    return float(np.isin(biome, named).mean())


# ---------------------------------------------------------------- 7. shared worlds


def shared_view(engine, rng, worlds: int, frames: int = 96) -> float:
    """B walks around near A; on A's frames where B is fully in view, B's avatar must be drawn
    at B's screen position in B's colour as the frame's light shows it: at least 8 of the
    pixels B's sprite covers (the simulator's frame of the same scene with and without B)
    within 90 (sum over RGB) of the simulator's."""
    ok = total = 0
    for _ in range(worlds):
        wid = engine.create_world(prompt=clear_prompt(rng), seed=unseen_seed(rng))
        a, b = engine.add_player(wid), engine.add_player(wid)
        pa, pb = engine.worlds[wid].players
        keys_b = random_keys(rng)
        for i in range(frames // 4):
            if i % 3 == 0:
                keys_b = random_keys(rng)
            out = engine.step({a: STILL, b: keys_b}, {a: 4, b: 4})
            sx, sy = pb.x - pa.x + CENTRE, pb.y - pa.y + CENTRE
            if not (0 <= sx <= spec.FRAME - spec.SPRITE and 0 <= sy <= spec.FRAME - spec.SPRITE):
                continue
            if abs(sx - CENTRE) < spec.SPRITE and abs(sy - CENTRE) < spec.SPRITE:
                continue  # B stands on A's own avatar, which is drawn on top
            scene = scene_of(engine, wid, a)
            with_b = sim.render(scene)[0].astype(int)
            kind = pb.slot % spec.AVATAR_COLORS
            is_b = (scene.sprites[0] == (kind, sx, sy)).all(1)
            scene.sprites[0][is_b] = -1
            b_pixels = (sim.render(scene)[0].astype(int) != with_b).any(2)
            if b_pixels.sum() < 8:
                continue  # B hidden (under a creature drawn later, or not drawn at all)
            got = out[a][-1].astype(int)[b_pixels]
            ok += int((np.abs(got - with_b[b_pixels]).sum(1) < 90).sum() >= 8)
            total += 1
        engine.drop_world(wid)
    return 100.0 * ok / max(total, 1)


# ---------------------------------------------------------------- 8. speed and memory


def speed(engine, batch: int, rounds: int = 6, chunk: int = 8) -> float:
    wids = [engine.create_world(prompt="a quiet meadow", seed=1000 + i) for i in range(batch)]
    pids = [engine.add_player(w) for w in wids]
    keys = {p: frozenset("d") for p in pids}
    chunks = {p: chunk for p in pids}
    engine.step(keys, chunks)  # warm-up
    t = time.perf_counter()
    for _ in range(rounds):
        engine.step(keys, chunks)
    fps = batch * chunk * rounds / (time.perf_counter() - t)
    for w in wids:
        engine.drop_world(w)
    return fps


def state_bytes(engine, rng) -> float:
    sizes = []
    for _ in range(4):
        wid = engine.create_world(prompt=clear_prompt(rng), seed=unseen_seed(rng))
        pid = engine.add_player(wid)
        rollout(engine, [pid], rng, 300)
        sizes.append(len(engine.snapshot(wid)))
        engine.drop_world(wid)
    return float(np.mean(sizes))
