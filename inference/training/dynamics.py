"""Train the learned dynamics (`world/dynamics.py`) on the teacher's probabilities.

    python -m inference.training.dynamics             # shipped config: minutes on 2 CPU cores
    python -m inference.training.dynamics --resume    # continue from var/checkpoints/dynamics.pt
    python -m inference.training.dynamics --steps 20 --out /tmp/d.safetensors   # smoke run

Each step draws random states rich in every process (`simulator/dynamics.py`: blobs of fire,
ash, puddles and snow, lava pools, canvas edges, every atmosphere and hour; creatures among
fires and water, near a player or not) and fits the model's probabilities to the teacher's:
KL, plus the squared log ratio on every class the teacher may draw (a slow rate such as ash
regrowing matters in a rollout though it weighs little in a KL) and a hinge that keeps what
the teacher never does under the sampling floor.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from inference.training.simulator import TRAIN_SEED_LIMIT
from inference.training.simulator.dynamics import (
    random_creature_batch,
    random_tile_batch,
    teacher_creature_probs,
    teacher_tile_probs,
)
from inference.world.dynamics import (
    LAVA,
    MARGIN,
    P_FLOOR,
    WEIGHTS,
    DynamicsConfig,
    DynamicsModel,
)

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class DynamicsTrainConfig:
    steps: int = 15000
    tile_batch: int = 128  # chunks (x 64 tiles) per step
    creature_batch: int = 320
    lr: float = 3e-3
    warmup: int = 100
    rate_weight: float = 0.1  # the squared log ratio on the classes the teacher draws
    never_weight: float = 1.0  # the hinge on the classes it never draws
    never_margin: float = 10.0  # ... which holds them under P_FLOOR / never_margin
    threads: int = 1  # 2 oversubscribe a shared 2-core machine (10x slower there)
    seed: int = 0
    eval_every: int = 1000
    max_minutes: float = 30.0  # stop early (and save) when the wall clock runs out
    checkpoint: str = str(ROOT / "var" / "checkpoints" / "dynamics.pt")
    out: str = str(WEIGHTS)


def fit_loss(logp: torch.Tensor, target: torch.Tensor, cfg: DynamicsTrainConfig) -> dict:
    """(..., K) model log-probabilities against (..., K) teacher probabilities -> loss parts."""
    drawn = target >= P_FLOOR
    kl = (target * (torch.log(target.clamp_min(1e-12)) - logp)).sum(-1).mean()
    ratio = (logp - torch.log(target.clamp_min(P_FLOOR))) ** 2
    rate = (ratio * drawn).sum() / drawn.sum().clamp_min(1)
    never = (
        torch.relu(logp - math.log(P_FLOOR / cfg.never_margin)) ** 2 * ~drawn
    ).sum() / drawn.numel()
    return {
        "kl": kl,
        "rate": cfg.rate_weight * rate,
        "never": cfg.never_weight * never,
    }


def floored(probs: np.ndarray) -> torch.Tensor:
    """The teacher's probabilities as they are drawn: under P_FLOOR is never."""
    p = np.where(probs >= P_FLOOR, probs, 0.0)
    return torch.as_tensor(p / p.sum(-1, keepdims=True), dtype=torch.float32)


def step_losses(rng, model: DynamicsModel, cfg: DynamicsTrainConfig, seeds) -> dict:
    tiles = random_tile_batch(rng, cfg.tile_batch, seeds)
    probs, cool = teacher_tile_probs(tiles)
    logits = model.tile_logits(tiles)  # (N, C + 1, 8, 8)
    logp = torch.log_softmax(logits[:, :-1], 1).permute(0, 2, 3, 1)
    parts = fit_loss(logp, floored(probs), cfg)
    lava = torch.as_tensor(tiles.tokens[:, MARGIN:-MARGIN, MARGIN:-MARGIN] == LAVA)
    if lava.any():
        q = torch.as_tensor(np.where(cool >= P_FLOOR, cool, 0.0), dtype=torch.float32)[lava]
        z = logits[:, -1][lava]
        two = torch.stack(
            [torch.nn.functional.logsigmoid(-z), torch.nn.functional.logsigmoid(z)], -1
        )
        cool_parts = fit_loss(two, torch.stack([1 - q, q], -1), cfg)
        parts["cool"] = sum(cool_parts.values())
    creatures = random_creature_batch(rng, cfg.creature_batch, seeds)
    heads = torch.log_softmax(model.creature_logits(creatures), -1)
    for k, v in fit_loss(heads, floored(teacher_creature_probs(creatures)), cfg).items():
        parts["c_" + k] = v
    return parts


def train(cfg: DynamicsTrainConfig, mcfg: DynamicsConfig, resume: bool = False) -> dict:
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    model = DynamicsModel(mcfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    start = 0
    ckpt = Path(cfg.checkpoint)
    if resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        print(f"resumed from {ckpt} at step {start}")
    rng = np.random.default_rng(cfg.seed * 1_000_003 + start)  # resumes draw fresh data
    seeds = (0, TRAIN_SEED_LIMIT)
    began = time.time()
    history: list[dict] = []
    bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps, desc="dynamics")
    step = start
    for step in bar:
        lr = cfg.lr * min(1.0, (step + 1) / cfg.warmup)
        lr *= 0.5 * (1 + math.cos(math.pi * step / cfg.steps))
        for group in opt.param_groups:
            group["lr"] = lr
        parts = step_losses(rng, model, cfg, seeds)
        loss = sum(parts.values())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        bar.set_postfix({k: f"{v.item():.4f}" for k, v in parts.items()})
        last = step + 1 == cfg.steps
        out_of_time = (time.time() - began) / 60 > cfg.max_minutes
        if (step + 1) % cfg.eval_every == 0 or last or out_of_time:
            record = {"step": step + 1, "minutes": round((time.time() - began) / 60, 2)}
            record.update({k: round(v.item(), 5) for k, v in parts.items()})
            history.append(record)
            tqdm.write(json.dumps(record))
            save(ckpt, model, opt, step + 1)
        if out_of_time:
            tqdm.write(f"stopping at step {step + 1}: {cfg.max_minutes} minute budget reached")
            break
    save(ckpt, model, opt, step + 1)
    model.eval().save(cfg.out, extra={"train": json.dumps(asdict(cfg)), "steps": str(step + 1)})
    print(f"saved {cfg.out}")
    return history[-1] if history else {}


def save(path: Path, model: DynamicsModel, opt, step: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for dc in (DynamicsTrainConfig, DynamicsConfig):
        for f in fields(dc):
            parser.add_argument(
                "--" + f.name.replace("_", "-"), type=type(f.default), default=f.default
            )
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint")
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume")
    cfg = DynamicsTrainConfig(**{f.name: args[f.name] for f in fields(DynamicsTrainConfig)})
    mcfg = DynamicsConfig(**{f.name: args[f.name] for f in fields(DynamicsConfig)})
    print(json.dumps(train(cfg, mcfg, resume=resume)))


if __name__ == "__main__":
    main()
