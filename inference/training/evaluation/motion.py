"""2-3. Motion and revisits: the view follows the keys, and a walked loop comes back to the same
frame."""

from __future__ import annotations

import numpy as np

from inference.training import simulator as sim
from inference.training.evaluation.measures import MOVES, at_side, means, psnr
from inference.training.evaluation.rollouts import (
    chunks,
    clear_prompt,
    scene_of,
    stand,
    unseen_seed,
)
from inference.world import spec
from inference.world.state import CreatureState


def phase_shift(a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """Integer (dx, dy) by which the content of a moved to reach b (phase correlation)."""
    f = a.shape[0]
    ga = a.astype(np.float64).mean(2)
    gb = b.astype(np.float64).mean(2)
    c = f // 2
    for g in (ga, gb):  # the avatar stays at the centre: hide it
        g[c - 6 : c + 6, c - 6 : c + 6] = g.mean()
    win = np.outer(np.hanning(f), np.hanning(f))
    fa, fb = np.fft.fft2((ga - ga.mean()) * win), np.fft.fft2((gb - gb.mean()) * win)
    r = fb * np.conj(fa)
    corr = np.fft.ifft2(r / (np.abs(r) + 1e-9)).real
    dy, dx = np.unravel_index(np.argmax(corr), corr.shape)
    dy = dy - f if dy > f // 2 else dy
    dx = dx - f if dx > f // 2 else dx
    return int(dx), int(dy)


def action_following(engine, rng, worlds: int) -> float:
    """Camera motion measured from generated frames vs the commanded motion, on frames where the
    avatar was free to move (open terrain)."""
    ok = total = 0
    for _ in range(worlds):
        wid = engine.create_world(prompt=clear_prompt(rng), seed=unseen_seed(rng))
        pid = engine.add_player(wid)
        player = engine.worlds[wid].players[0]
        prev = stand(engine, [pid])[pid]
        for _ in range(6):
            keys = MOVES[rng.integers(len(MOVES))]
            dx, dy = spec.keys_to_dir(keys)
            for _ in range(8):
                x0, y0 = player.x, player.y
                frame = engine.step({pid: keys}, {pid: 1})[pid][-1]
                moved = (player.x - x0, player.y - y0)
                if moved == (dx * spec.PLAYER_SPEED, dy * spec.PLAYER_SPEED):  # not blocked
                    mx, my = phase_shift(prev, frame)
                    # the world moves opposite to the camera
                    ok += abs(-mx - moved[0]) <= 1 and abs(-my - moved[1]) <= 1
                    total += 1
                prev = frame
        engine.drop_world(wid)
    return 100.0 * ok / max(total, 1)


def populate(world, rng, weather: int, creatures: int = 2) -> None:
    """Turn an atmosphere and wandering creatures on (set directly: the text heads are judged
    elsewhere)."""
    world.weather = weather
    for _ in range(creatures):
        dx, dy = spec.spawn_offset(world.seed, world.t, world.spawned)
        kind = int(rng.integers(len(spec.CREATURES)))
        world.creatures.append(CreatureState(kind, dx, dy, world.spawned))
        world.spawned += 1


def closed_walk(engine, wid: str, pid: str, start: bytes, side: int) -> np.ndarray | None:
    """Walk a square loop of `side` frames a leg from the snapshot, in the first orientation
    that obstacles do not block; -> the frame on arriving back at the spawn (None: every
    orientation was blocked)."""
    turns = ("d", "s", "a", "w")
    loops = [turns[i:] + turns[:i] for i in range(4)]
    loops += [tuple(reversed(loop)) for loop in loops]
    for loop in loops:
        engine.restore(start)
        for key in loop:
            for n in chunks(side, 8):
                last = engine.step({pid: frozenset(key)}, {pid: n})[pid][-1]
        p = engine.worlds[wid].players[0]
        if (p.x, p.y) == spec.player_spawn(0):
            return last
    return None


# Loop legs (frames): each loop lasts a whole number of particle periods (OVERLAY frames), so
# the atmosphere's particles are back where they were and what can differ is the world itself
# (and the creatures, which wander on).
REVISIT_SIDES = (40, 32, 24, 16)
assert all(4 * side % spec.OVERLAY == 0 for side in REVISIT_SIDES)


def revisit(engine, rng, worlds: int) -> tuple[float, dict, dict]:
    """Closed walk back to the start with an atmosphere and two creatures on; PSNR of the
    first vs the last frame, and without the pixels sprites cover in either (the world)."""
    scores: dict[str, list] = {w: [] for w in spec.WEATHERS[1:]}
    static, blocked = [], 0
    for i in range(worlds):
        weather = 1 + i % (len(spec.WEATHERS) - 1)
        wid = engine.create_world(prompt=clear_prompt(rng), seed=unseen_seed(rng))
        pid = engine.add_player(wid)
        populate(engine.worlds[wid], rng, weather)
        first = stand(engine, [pid])[pid]
        first_cover = sim.sprite_cover(scene_of(engine, wid, pid))[0]
        start = engine.snapshot(wid)
        for side in REVISIT_SIDES:
            last = closed_walk(engine, wid, pid, start, side)
            if last is not None:
                break
        if last is None:
            blocked += 1  # every loop was blocked by obstacles
        else:
            scores[spec.WEATHERS[weather]].append(psnr(first, last))
            bare = ~(first_cover | sim.sprite_cover(scene_of(engine, wid, pid))[0])
            static.append(psnr(first, last, at_side(bare, first.shape[0])))
        engine.drop_world(wid)
    flat = [s for v in scores.values() for s in v]
    extra = {
        "blocked_worlds": blocked,
        "psnr_without_sprites_db": float(np.mean(static)) if static else 0.0,
    }
    return (float(np.mean(flat)) if flat else 0.0), means(scores), extra
