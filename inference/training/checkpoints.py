"""Checkpoints to resume from, and the exported weights with their config.json."""

from __future__ import annotations

import copy
import json
from dataclasses import asdict
from pathlib import Path

import torch

from inference.training.config import ROOT
from inference.world.model import save_classifier


def save_checkpoint(path: Path, model, classifier, opt, step, cfg, mcfg) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(
        {
            "model": model.state_dict(),
            "classifier": classifier.state_dict(),
            "opt": opt.state_dict(),
            "step": step,
            "train_config": asdict(cfg),
            "model_config": asdict(mcfg),
        },
        tmp,
    )
    tmp.replace(path)  # atomic: an interrupted save never corrupts the last checkpoint


def export(model, classifier, cfg, mcfg, history, steps) -> None:
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    model = copy.deepcopy(model).cpu().eval()  # the training run (and its checkpoint) goes on
    mcfg = model.cfg
    model.save(out / "world_model.safetensors", extra={"steps": str(steps)})
    save_classifier(classifier.cpu().eval(), out / "classifier.safetensors")
    (out / "config.json").write_text(
        json.dumps(
            {
                "model": asdict(mcfg),
                "train": _portable(asdict(cfg)),
                "steps_done": steps,
                "history": history,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"exported weights to {out}")


def read_meta(out: str | Path) -> dict:
    """The exported weights' config.json (what trained them), for the steps run on them later."""
    return json.loads((Path(out) / "config.json").read_text())


def write_meta(out: str | Path, meta: dict) -> None:
    (Path(out) / "config.json").write_text(json.dumps(meta, indent=2) + "\n")


def _portable(train_config: dict) -> dict:
    """Paths inside the repository are recorded relative to it: the file ships with the repo."""
    out = dict(train_config)
    for key in ("out", "checkpoint"):
        path = Path(out[key]).resolve()
        if path.is_relative_to(ROOT):
            out[key] = str(path.relative_to(ROOT))
    return out
