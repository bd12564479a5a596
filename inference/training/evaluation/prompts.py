"""4. Prompts: worlds built from held-out phrasings show what was asked, and the written prompt
and event sets read as labelled."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from inference.training import simulator as sim
from inference.training.evaluation.measures import (
    CANVAS_SHOWN,
    EVAL_SEEDS,
    EVENT_KINDS,
    MIX_SHOWN,
    Judge,
    rates,
)
from inference.training.evaluation.rollouts import (
    close_worlds,
    open_worlds,
    rollout,
    stand,
    stratified_prompts,
)
from inference.world import spec
from inference.world.engine import UnsupportedEvent


def biome_hits(probs: np.ndarray, labels: dict) -> dict[int, bool]:
    """Whether each biome a prompt names shows, from the classifier's mean probabilities over
    a world's judged frames. One biome: it is the top class. Two: they are the top two and the
    second holds at least MIX_SHOWN (frames far apart see different patches of a mix, and on a
    frame showing both the classifier splits its belief: the mean over frames rewards both)."""
    named = [b for b in (labels["biome"], labels.get("biome2", -1)) if b >= 0]
    top = list(np.argsort(-probs)[: len(named)])
    return {b: b in top and (len(named) == 1 or probs[b] >= MIX_SHOWN) for b in named}


def canvas_tokens(world) -> np.ndarray:
    """Every token of a world's generated canvas, flat."""
    return np.concatenate([c.ravel() for c in world.chunks.values()]).astype(np.int64)


def canvas_shares(world) -> np.ndarray:
    """Share of each biome among the biome tokens of a world's generated canvas."""
    tokens = canvas_tokens(world)
    biomes = tokens[tokens < spec.BIOME_TOKENS] // len(spec.TILE_KINDS)
    return np.bincount(biomes, minlength=len(spec.BIOMES)) / max(len(biomes), 1)


def kind_counts(world, biome: int) -> np.ndarray:
    """How many of the biome's tiles in a world's generated canvas are each tile kind."""
    tokens, k = canvas_tokens(world), len(spec.TILE_KINDS)
    mine = tokens[(tokens < spec.BIOME_TOKENS) & (tokens // k == biome)]
    return np.bincount(mine % k, minlength=k)


def simulator_kind_mix(
    biome: int, worlds: int = 4, size: int = 64, first_seed: int = EVAL_SEEDS[0]
) -> np.ndarray:
    """The share of each tile kind in the simulator's worlds of a biome (unseen seeds unless
    told)."""
    tx, ty = np.meshgrid(np.arange(size), np.arange(size))
    k = len(spec.TILE_KINDS)
    tokens = np.concatenate(
        [sim.terrain_tokens(first_seed + s, biome, tx, ty).ravel() for s in range(worlds)]
    )
    counts = np.bincount(tokens[tokens < spec.BIOME_TOKENS] % k, minlength=k)
    return counts / counts.sum()


def total_variation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Total variation distance between shares over the last axis (0: the same mix)."""
    return 0.5 * np.abs(a - b).sum(-1)


def kind_mix_distance(counts: dict[str, np.ndarray]) -> dict[str, float]:
    """Per biome: total variation distance between the tile kinds the generator drew for it
    and the simulator's (0: the same mix; a chunk of nothing but the commonest kind is far)."""
    out = {}
    for name, c in counts.items():
        if c.sum():
            ref = simulator_kind_mix(spec.BIOMES.index(name))
            out[name] = round(float(total_variation(c / c.sum(), ref)), 3)
    return out


def mean_probs(judge: Judge, views: list[dict], pids) -> dict[str, np.ndarray]:
    """The classifier's probabilities per head, averaged over each player's frames in views
    (a list of {pid: frame}) -> {head: (players, classes)}."""
    frames = np.stack([[v[pid] for v in views] for pid in pids])  # (players, views, F, F, 3)
    probs = judge(frames.reshape(-1, *frames.shape[2:]))
    return {k: v.reshape(len(pids), len(views), -1).mean(1) for k, v in probs.items()}


def pct(hits: list) -> float | None:
    return 100.0 * float(np.mean(hits)) if hits else None


def judged(probs: dict, i: int, labels: dict, by: dict) -> dict[str, bool]:
    """Whether world i's frames show the prompt's biome(s), atmosphere and time of day; each
    is also recorded under its value in the per-concept lists `by`."""
    shown = biome_hits(probs["biome"][i], labels)
    for b, hit in shown.items():
        by["biome"][spec.BIOMES[b]].append(hit)
    ok = {"biome": all(shown.values())}
    for k, names in (("weather", spec.WEATHERS), ("time", spec.TIMES)):
        ok[k] = int(probs[k][i].argmax()) == labels[k]
        by[k][names[labels[k]]].append(ok[k])
    return ok


def state_matches(world, labels: dict, minute: int) -> dict[str, bool]:
    """Did the text heads set the world up as the prompt asked (biomes named, atmosphere, time
    of day at creation, creature if one was named)? Tells text misreadings from what the
    frames fail to show."""
    named = sorted(b for b in (labels["biome"], labels["biome2"]) if b >= 0)
    out = {
        "biome": [int(b) for b in np.flatnonzero(world.biome_probs > 0)] == named,
        "weather": world.weather == labels["weather"],
        "time": spec.time_label(minute) == labels["time"],
    }
    if labels["creature"] >= 0:
        out["creature"] = any(c.kind == labels["creature"] for c in world.creatures)
    return out


def prompt_adherence(engine, judge: Judge, rng, worlds: int) -> tuple[float, dict, dict]:
    """Eval-split prompts over every biome and atmosphere; each world is judged on four
    frames (its first, then every 100 frames of random walking: far enough apart to see both
    patches of a mix) by the classifier's mean probabilities.
    -> (mean of the biome, atmosphere and time rates, tables, extra)."""
    prompts = stratified_prompts(rng, worlds)
    opened = open_worlds(engine, prompts, rng)
    pids = [pid for _, pid in opened]
    minutes = [engine.worlds[wid].minute for wid, _ in opened]
    first = stand(engine, pids)
    views = [first, *rollout(engine, pids, rng, 300, keep=(100, 200)).values()]
    probs = mean_probs(judge, views, pids)
    by = {"biome": {b: [] for b in spec.BIOMES}, "weather": {w: [] for w in spec.WEATHERS}}
    by["time"] = {t: [] for t in spec.TIMES}
    hits: dict[str, list] = {"biome": [], "weather": [], "time": [], "all": []}
    state: dict[str, list] = {"biome": [], "weather": [], "time": [], "creature": []}
    shown_if_right: dict[str, list] = {"biome": [], "weather": [], "time": []}
    canvas: dict[str, list] = {b: [] for b in spec.BIOMES}
    kinds = {b: np.zeros(len(spec.TILE_KINDS), np.int64) for b in spec.BIOMES}
    mixed, canvas_both = [], []
    for i, ((wid, _), (_, labels)) in enumerate(zip(opened, prompts, strict=True)):
        ok = judged(probs, i, labels, by)
        for k, v in {**ok, "all": all(ok.values())}.items():
            hits[k].append(v)
        world = engine.worlds[wid]
        for k, v in state_matches(world, labels, minutes[i]).items():
            state[k].append(v)
            if v and k in ok:
                shown_if_right[k].append(ok[k])
        # does the latent itself hold the named biomes? (tells generator from renderer)
        shares = canvas_shares(world)
        if labels["biome2"] >= 0:
            mixed.append(ok["biome"])
            named = [labels["biome"], labels["biome2"]]
            canvas_both.append(bool((shares[named] >= CANVAS_SHOWN).all()))
        else:
            canvas[spec.BIOMES[labels["biome"]]].append(shares[labels["biome"]])
            kinds[spec.BIOMES[labels["biome"]]] += kind_counts(world, labels["biome"])
    close_worlds(engine, opened)
    per = {k: pct(v) for k, v in hits.items()}
    tables = {
        "prompt_adherence_by_biome": rates(by["biome"]),
        "prompt_adherence_by_atmosphere": rates(by["weather"]),
        "prompt_adherence_by_time": rates(by["time"]),
    }
    extra = {
        "by_attribute": per,
        "state_right_pct": {k: pct(v) for k, v in state.items()},
        "shown_when_state_right_pct": {k: pct(v) for k, v in shown_if_right.items()},
        "mixed_worlds": len(mixed),
        "mixed_biome_pct": pct(mixed),
        "mixed_canvas_both_pct": pct(canvas_both),
        "single_canvas_share_pct": {b: pct(v) for b, v in canvas.items() if v},
        "kind_mix_distance": kind_mix_distance(kinds),
    }
    return float(np.mean([per["biome"], per["weather"], per["time"]])), tables, extra


WRITTEN_PROMPTS = Path(__file__).resolve().parents[1] / "data" / "prompts_written_heldout.tsv"


def read_written(path: Path) -> list[tuple[str, dict]]:
    """A TSV of hand-written prompts: text, biome(s) joined by commas, atmosphere, time of day
    ('#' lines are comments) -> [(text, {"biomes", "weather", "time"})]."""
    rows = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            text, biomes, weather, time_of_day = line.split("\t")
            want = {"biomes": sorted(biomes.split(",")), "weather": weather, "time": time_of_day}
            rows.append((text, want))
    return rows


def written_prompts(engine, path: Path = WRITTEN_PROMPTS) -> dict:
    """How the text side reads prompts written by hand as players write them (no frames are
    judged: the generated banks' phrasings are the only text the prompt stage meets).
    -> {"n", per attribute and "all": % read right, "misses": [...]}."""
    hits: dict[str, list] = {"biomes": [], "weather": [], "time": [], "all": []}
    misses = []
    for text, want in read_written(path):
        wid = engine.create_world(prompt=text, seed=1)
        seen = engine.describe(wid)
        engine.drop_world(wid)
        got = {"biomes": sorted(seen["biomes"]), "weather": seen["weather"], "time": seen["time"]}
        ok = {k: got[k] == want[k] for k in want}
        for k, v in {**ok, "all": all(ok.values())}.items():
            hits[k].append(v)
        if not all(ok.values()):
            wrong = ", ".join(f"{got[k]} for {want[k]}" for k in ok if not ok[k])
            misses.append(f"{text!r}: {wrong}")
    return {"n": len(hits["all"]), **{k: pct(v) for k, v in hits.items()}, "misses": misses}


WRITTEN_EVENTS = Path(__file__).resolve().parents[1] / "data" / "events_written_heldout.tsv"
# set C, written later the same way; it chose part of the setting rule, so it is not kept apart
WRITTEN_EVENTS_C = WRITTEN_EVENTS.with_name("events_written_c.tsv")


def written_events(engine, path: Path = WRITTEN_EVENTS) -> dict:
    """How the text side reads event texts written as players type them: per kind asked for
    (and "unsupported": what the model had no creature or thing of before the open vocabulary),
    % read as that; -> {"n", per kind and "all", "misses": [...], "open": % of the unsupported
    that come as a thing of the open vocabulary}. A read names the asked value of its kind, or
    none of the model's own creatures and things at all (never another in its place)."""
    hits: dict[str, list] = {}
    misses, opened = [], []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        text, kind, value = (line.split("\t") + [""])[:3]
        try:
            read = engine.read_event(text)
            got = {k: EVENT_KINDS[k][v] for k, v in read.items() if k in EVENT_KINDS and v >= 0}
            things = [m.concept.name for m in read["objects"]]
        except UnsupportedEvent:
            got, things = {}, []
        ok = not got if kind == "unsupported" else got.get(kind) == value
        hits.setdefault(kind, []).append(ok)
        if kind == "unsupported":
            opened.append(bool(things))
        if not ok:
            misses.append(f"{text!r}: {got or 'unsupported'} for {kind} {value}".rstrip())
    every = [v for vs in hits.values() for v in vs]
    return {
        "n": len(every),
        **{k: pct(v) for k, v in hits.items()},
        "all": pct(every),
        "open": pct(opened) if opened else None,
        "misses": misses,
    }
