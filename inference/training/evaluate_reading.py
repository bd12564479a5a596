"""Measure how the engine reads text: world prompts and event texts, per field.

    python -m inference.training.evaluate_reading [--n 400] [--json PATH]

Text only (no frames): what `WorldEngine.read_prompt` and `read_event` make of
- the written prompts (`data/prompts_written.tsv`, the tuning set, and
  `data/prompts_written_heldout.tsv`, never used to choose anything),
- synthetic prompts of the phrasing banks' eval split (held-out phrasings half the time),
- the written events (`data/events_written_heldout.tsv`, and set C, `events_written_c.tsv`),
- synthetic events of the eval split.
With `--split tune` (and weights made by `own_reader --split fit`): the synthetic prompts and
events of the tune split, whose held-back entries neither that reader nor the text heads
(trained afresh on the fit split, `fit_text_heads`) saw, and the written tuning prompts;
nothing held out is read, so settings are chosen here.
A prompt's field is right when the reading equals its label (the biomes as a set); an event's
kind when its value is read (-1: no change asked, none read).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from inference.training.batches import text_dataset
from inference.training.config import TrainConfig, cosine
from inference.training.evaluation.prompts import (
    WRITTEN_EVENTS,
    WRITTEN_EVENTS_C,
    WRITTEN_PROMPTS,
    read_written,
    written_events,
)
from inference.training.losses import text_loss
from inference.training.own_reader import names_for
from inference.training.simulator import phrasing
from inference.world import spec
from inference.world.engine import UnsupportedEvent, WorldEngine
from inference.world.model import EVENT_HEADS, PROMPT_HEADS, TextHeads, WorldModel
from inference.world.reading import Reader
from inference.world.sprites import OwnReaderModel

WRITTEN_TUNING = WRITTEN_PROMPTS.with_name("prompts_written.tsv")
EVENT_FIELDS = ("weather", "time", "creature", "thing")


def _pct(hits: list[bool]) -> float:
    return round(100.0 * float(np.mean(hits)), 1) if hits else float("nan")


def _biomes(probs: np.ndarray) -> list[str]:
    return sorted(spec.BIOMES[b] for b in np.flatnonzero(probs >= 0.2))


def written_prompts(engine: WorldEngine, path: Path) -> dict:
    hits: dict[str, list] = {"biomes": [], "weather": [], "time": [], "all": []}
    for text, want in read_written(path):
        r = engine.read_prompt(text)
        got = {
            "biomes": _biomes(r.biome_probs),
            "weather": spec.WEATHERS[r.weather],
            "time": spec.TIMES[r.time],
        }
        ok = {k: got[k] == want[k] for k in want}
        for k, v in {**ok, "all": all(ok.values())}.items():
            hits[k].append(v)
    return {"n": len(hits["all"]), **{k: _pct(v) for k, v in hits.items()}}


def synthetic_prompts(engine: WorldEngine, n: int, split: str = "eval") -> dict:
    rng = np.random.default_rng(46)
    hits: dict[str, list] = {"biomes": [], "weather": [], "time": [], "creature": [], "all": []}
    for _ in range(n):
        text, labels = phrasing.world_prompt(rng, split)
        r = engine.read_prompt(text)
        want = sorted(spec.BIOMES[b] for b in (labels["biome"], labels["biome2"]) if b >= 0)
        ok = {
            "biomes": _biomes(r.biome_probs) == want,
            "weather": r.weather == labels["weather"],
            "time": r.time == labels["time"],
            "creature": r.creature == labels["creature"],
        }
        for k, v in {**ok, "all": all(ok.values())}.items():
            hits[k].append(v)
    return {"n": n, **{k: _pct(v) for k, v in hits.items()}}


def synthetic_events(engine: WorldEngine, n: int, split: str = "eval") -> dict:
    rng = np.random.default_rng(47)
    hits: dict[str, list] = {k: [] for k in (*EVENT_FIELDS, "all")}
    for _ in range(n):
        text, labels = phrasing.event_text(rng, split)
        try:
            read = engine.read_event(text)
        except UnsupportedEvent:
            read = dict.fromkeys(EVENT_FIELDS, -1)
        ok = {k: read[k] == labels[k] for k in EVENT_FIELDS}
        for k, v in {**ok, "all": all(ok.values())}.items():
            hits[k].append(v)
    return {"n": n, **{k: _pct(v) for k, v in hits.items()}}


def fit_text_heads(model: WorldModel, steps: int = 3000) -> None:
    """In place: fresh prompt and event heads trained on the fit split alone, so the tune
    split's held-back entries are as new to them as to a reader of `own_reader --split fit`
    (the shipped heads were trained on the whole train split)."""
    cfg = TrainConfig()
    text = text_dataset(cfg, "fit")
    gen = torch.Generator().manual_seed(cfg.seed)
    for kind, spec_heads in (("prompt", PROMPT_HEADS), ("event", EVENT_HEADS)):
        heads = TextHeads(model.cfg, spec_heads).train()
        opt = torch.optim.AdamW(heads.parameters(), lr=cfg.lr)
        for step in range(steps):
            for group in opt.param_groups:
                group["lr"] = cfg.lr * cosine(step, steps)
            loss = text_loss(heads, text, kind, cfg.batch_text, "cpu", gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        print(f"{kind} heads fitted: last loss {loss.item():.3f}", flush=True)
        setattr(model, f"{kind}_heads", heads.eval())


def engine_for(split: str, own_weights: Path | None = None) -> WorldEngine:
    """The shipped engine; for the tune split, with text heads of the fit split; with
    `own_weights`, reading with that own reader (and, on the tune split, the fit split's
    names)."""
    engine = WorldEngine.load()
    if split == "tune":
        fit_text_heads(engine.model)
    if own_weights:
        rows = names_for("fit" if split == "tune" else "train")
        own = OwnReaderModel.from_file(own_weights)
        engine.reader = Reader(engine.reader.model, own=own, own_rows=rows)
    return engine


def sweep_own_min(engine: WorldEngine, n: int, values: list[float]) -> str:
    """The tune split read at each `Reader.own_min`: a table of % read right (all fields)."""
    rows = ["| own_min | tune descriptions | tune events | written tuning prompts |"]
    rows.append("| --- | --- | --- | --- |")
    for value in values:
        engine.reader.own_min = value
        out = evaluate(n, "tune", engine=engine)
        cells = [out[k]["all"] for k in ("prompts_synthetic_tune", "events_synthetic_tune")]
        rows.append(
            f"| {value:g} | {cells[0]} | {cells[1]} | {out['prompts_written_tuning']['all']} |"
        )
        print(rows[-1], flush=True)
    return "\n".join(rows)


def evaluate(
    n: int, split: str = "eval", own_weights: Path | None = None, engine: WorldEngine | None = None
) -> dict:
    engine = engine or engine_for(split, own_weights)
    out, began = {}, time.perf_counter()
    out["prompts_written_tuning"] = written_prompts(engine, WRITTEN_TUNING)
    if split == "tune":
        out["prompts_synthetic_tune"] = synthetic_prompts(engine, n, "tune")
        out["events_synthetic_tune"] = synthetic_events(engine, n, "tune")
        out["seconds"] = round(time.perf_counter() - began, 1)
        return out
    out["prompts_written_heldout"] = written_prompts(engine, WRITTEN_PROMPTS)
    out["prompts_synthetic_eval"] = synthetic_prompts(engine, n)
    events = (("events_written_heldout", WRITTEN_EVENTS), ("events_written_c", WRITTEN_EVENTS_C))
    for name, path in events:
        got = written_events(engine, path)
        out[name] = {k: v for k, v in got.items() if k != "misses"}
        out[name]["misses"] = len(got["misses"])
    out["events_synthetic_eval"] = synthetic_events(engine, n)
    out["seconds"] = round(time.perf_counter() - began, 1)
    return out


def table(out: dict) -> str:
    lines = []
    for name, row in out.items():
        if isinstance(row, dict):
            cells = ", ".join(f"{k} {v}" for k, v in row.items())
            lines.append(f"| {name} | {cells} |")
    return "\n".join(["| set | % right per field |", "| --- | --- |", *lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=400, help="synthetic prompts and events each")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--split", choices=("eval", "tune"), default="eval")
    parser.add_argument("--own-weights", type=Path, help="the own reader's (else the shipped)")
    parser.add_argument(
        "--sweep-own-min",
        help="comma-separated values of Reader.own_min to read the tune split at (a table)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.sweep_own_min:
        engine = engine_for("tune", args.own_weights)
        print(sweep_own_min(engine, args.n, [float(v) for v in args.sweep_own_min.split(",")]))
        return
    out = evaluate(args.n, args.split, args.own_weights)
    print(table(out))
    print(f"({out['seconds']} s)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
