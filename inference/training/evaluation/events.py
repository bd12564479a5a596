"""5. Events: each event changes the state it names and draws what it adds near the simulator's
drawing."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from inference.training import simulator as sim
from inference.training.evaluation.measures import (
    CENTRE,
    DRAWN_MAX_ERR,
    EVENT_KINDS,
    SPLIT,
    Judge,
    at_side,
    rates,
)
from inference.training.evaluation.prompts import mean_probs
from inference.training.evaluation.rollouts import (
    close_worlds,
    open_worlds,
    rollout,
    scene_of,
    stand,
)
from inference.world import spec
from inference.world.engine import UnsupportedEvent


def event_cases(rounds: int) -> list[tuple[str, int]]:
    """Every value of every event kind, `rounds` times."""
    return [
        (k, v) for _ in range(rounds) for k, names in EVENT_KINDS.items() for v in range(len(names))
    ]


def make_room(world, kind: str, value: int) -> None:
    """A weather or time event must change something: move the world off the target first."""
    if kind == "weather" and world.weather == value:
        world.weather = (value + 1) % len(spec.WEATHERS)
    if kind == "time" and world.time == value:
        world.minute = spec.TIME_MINUTES[(value + 2) % len(spec.TIMES)]


def conditions(world) -> tuple:
    """What each event kind changes, in EVENT_KINDS order."""
    return world.weather, world.minute, len(world.creatures), len(world.things)


def state_changed(world, kind: str, value: int, was: tuple) -> bool:
    """Did the world's state change as the event asked?"""
    if kind == "weather":
        return world.weather == value
    if kind == "time":
        return world.minute == spec.TIME_MINUTES[value]
    if kind == "creature":
        return len(world.creatures) > was[2] and world.creatures[-1].kind == value
    p = world.players[0]
    cells = spec.place_cells(value, p.x, p.y)
    placed = len(world.things) > was[3] and world.things[-1] == value
    return placed and all(world.token_at(tx, ty) == token for tx, ty, token in cells)


def apply_case(engine, rng, wid: str, kind: str, value: int) -> dict:
    """Send an eval-split phrasing of the event; -> what became of it (not yet judged)."""
    world = engine.worlds[wid]
    was = conditions(world)
    text = sim.event_for(rng, kind, value, SPLIT)
    try:
        engine.apply_event(wid, text)
        recognised = True
    except UnsupportedEvent:
        recognised = False
    now = conditions(world)
    side = [k for i, k in enumerate(EVENT_KINDS) if k != kind and now[i] != was[i]]
    return {
        "kind": kind,
        "value": value,
        "text": text,
        "recognised": recognised,
        "state": state_changed(world, kind, value, was),
        "side_effects": side,
    }


def drawn(before: np.ndarray, after: np.ndarray, ref: np.ndarray, mask: np.ndarray) -> tuple:
    """The frame changed where the event added something, toward what the simulator draws of
    the same scene: closer to it than the frame before, and close in absolute terms. (Plain
    "changed" would fail a grey wolf on grey streets and pass any glitch.)
    -> (drawn, mean abs error of the new frame there)."""
    if not mask.any():
        return False, None
    # the decoder draws the simulator's 128-pixel view at 192: compare at the reference's side
    before, after = (at_side(f, ref.shape[0]) for f in (before, after))
    err_after = np.abs(after.astype(np.float64) - ref)[mask].mean()
    err_before = np.abs(before.astype(np.float64) - ref)[mask].mean()
    return bool(err_after < err_before and err_after <= DRAWN_MAX_ERR), float(err_after)


def thing_mask(scene: sim.Scene, cells, px: int, py: int) -> np.ndarray:
    """(F, F) bool: the frame pixels of the placed tiles that no sprite covers."""
    f = scene.frame
    mask = np.zeros((f, f), dtype=bool)
    left, top = px - f // 2, py - f // 2
    for tx, ty, _ in cells:
        x0, y0 = tx * spec.TILE - left, ty * spec.TILE - top
        mask[max(y0, 0) : max(y0 + spec.TILE, 0), max(x0, 0) : max(x0 + spec.TILE, 0)] = True
    return mask & ~sim.sprite_cover(scene)[0]


def creature_mask(scene: sim.Scene, sprite: tuple[int, int, int]) -> np.ndarray:
    """(F, F) bool: pixels of one sprite (kind, screen x, screen y), if the scene draws it."""
    entries = scene.sprites[0]
    match = (entries == np.array(sprite)).all(1)
    return sim.sprite_cover(replace(scene, sprites=np.where(match[:, None], entries, -1)[None]))[0]


def added_mask(engine, wid: str, pid: str, kind: str, value: int) -> tuple:
    """(scene of the latest frame, pixels of what a creature or thing event added)."""
    scene = scene_of(engine, wid, pid)
    world = engine.worlds[wid]
    p = world.players[0]
    if kind == "thing":
        return scene, thing_mask(scene, spec.place_cells(value, p.x, p.y), p.x, p.y)
    c = world.creatures[-1]
    sprite = (spec.AVATAR_COLORS + c.kind, c.x - p.x + CENTRE, c.y - p.y + CENTRE)
    return scene, creature_mask(scene, sprite)


def event_round(engine, judge: Judge, rng, cases) -> list[dict]:
    """One world per case, all stepped together: the event is applied after 4 frames, the
    next frame (everyone still) is compared with the one before, then 24 frames of walking are
    shown to the classifier. -> one result per case."""
    prompts = [sim.world_prompt(rng, SPLIT) for _ in cases]
    opened = open_worlds(engine, prompts, rng)
    pids = [pid for _, pid in opened]
    for (wid, _), (kind, value) in zip(opened, cases, strict=True):
        make_room(engine.worlds[wid], kind, value)
    before = stand(engine, pids, 4)
    results = [
        apply_case(engine, rng, wid, kind, value)
        for (wid, _), (kind, value) in zip(opened, cases, strict=True)
    ]
    after = stand(engine, pids)
    for r, (wid, pid) in zip(results, opened, strict=True):
        if r["kind"] in ("creature", "thing"):
            r["shown"] = r["state"]
            if r["state"]:  # else there is nothing of it to look for
                scene, mask = added_mask(engine, wid, pid, r["kind"], r["value"])
                ref = sim.render(scene)[0].astype(np.float64)
                r["shown"], r["drawn_err"] = drawn(before[pid], after[pid], ref, mask)
    walk = rollout(engine, pids, rng, 24, keep=range(4, 24, 4), chunk=4)  # every 4th frame
    probs = mean_probs(judge, list(walk.values()), pids)
    for i, r in enumerate(results):
        if r["kind"] in ("weather", "time"):
            r["shown"] = int(probs[r["kind"]][i].argmax()) == r["value"]
        r["ok"] = bool(r["recognised"] and r["state"] and r["shown"])
    close_worlds(engine, opened)
    return results


def miss_note(r: dict) -> str:
    why = [
        w
        for w, ok in (
            ("unrecognised", r["recognised"]),
            ("state", r["state"]),
            ("not shown", r["shown"]),
        )
        if not ok
    ]
    return f"{r['kind']}:{EVENT_KINDS[r['kind']][r['value']]} {r['text']!r} ({', '.join(why)})"


def event_response(engine, judge: Judge, rng, rounds: int) -> tuple[float, dict, dict]:
    """Every event value, `rounds` times, phrased with eval-split phrasings. An event counts
    when the text was recognised, the world's state changed as asked and the frames show it:
    weather and time by the classifier (the minute jumped to the named moment), creatures and
    things drawn where they are (things: their cells hold the thing's token)."""
    cases = event_cases(1)
    results = []
    for _ in range(rounds):
        results += event_round(engine, judge, rng, cases)
    by_kind = {k: [] for k in EVENT_KINDS}
    by_value = {k: {name: [] for name in names} for k, names in EVENT_KINDS.items()}
    for r in results:
        by_kind[r["kind"]].append(r["ok"])
        by_value[r["kind"]][EVENT_KINDS[r["kind"]][r["value"]]].append(r["ok"])
    misses = [miss_note(r) for r in results if not r["ok"]]
    errors: dict[str, list] = {}
    for r in results:
        if r.get("drawn_err") is not None:
            name = f"{r['kind']}:{EVENT_KINDS[r['kind']][r['value']]}"
            errors.setdefault(name, []).append(r["drawn_err"])
    extra = {
        "unrecognised": sum(not r["recognised"] for r in results),
        "state_wrong": sum(not r["state"] for r in results),
        "not_shown": sum(not r["shown"] for r in results),
        "side_effects": sum(bool(r["side_effects"]) for r in results),
        # mean abs error (0-255) vs the simulator where a creature or thing was added
        "drawn_err_by_value": {k: round(float(np.mean(v)), 1) for k, v in errors.items()},
        "misses": misses,
    }
    tables = {
        "event_response_by_kind": rates(by_kind),
        "event_response_by_value": {k: rates(v) for k, v in by_value.items()},
    }
    return 100.0 * float(np.mean([r["ok"] for r in results])), tables, extra
