"""Train the frame decoder (`world/decoder.py`) against the teacher (`simulator/teacher.py`).

    python -m inference.training.train_decoder [--resume] [--max-minutes 60] [--steps N]

Each step draws random scenes from random worlds (seeds of the training range), with
creatures, avatars, open-vocabulary things (sprites the sprite generator drew for a sample of
concepts) and their lights, and the teacher's frames of them; the decoder learns to draw the
same frames (L1 + MSE on 96-pixel crops of 64-world-pixel views: the network is the same
function at any size). It saves a checkpoint every ``eval_every`` steps and when the minute
budget runs out, so training spans sessions with ``--resume``; the weights and the evaluation
on unseen seeds (PSNR, SSIM, shimmer while standing still) go to ``inference/weights/``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from inference.training import simulator as sim
from inference.training.config import ROOT, cosine
from inference.world import spec
from inference.world.allocator import keep_freed_memory
from inference.world.decoder import CONFIG_FILE, DecoderConfig, FrameDecoder
from inference.world.objects import MAX_LIGHTS, MAX_OBJECTS
from inference.world.scenes import fire_lights

WEIGHTS = ROOT / "inference" / "weights"
EVAL_SEEDS = (sim.TRAIN_SEED_LIMIT, 2 * sim.TRAIN_SEED_LIMIT)  # worlds it never trains on


@dataclass
class DecoderTrainConfig:
    steps: int = 30000  # across all sessions (the schedule's length)
    lr: float = 2e-3  # peak, cosine decay to 5%
    warmup: int = 200
    batch: int = 16
    frame: int = 64  # world pixels of a training view (drawn at 96)
    things: float = 0.4  # share of views with open-vocabulary things
    covers: float = 0.04  # share of tiles under fire, ash, puddles or snow
    concepts: int = 192  # concepts whose sprites the things are drawn from
    eval_every: int = 500
    eval_frames: int = 48
    threads: int = 2
    bf16: bool = True  # bfloat16 autocast (the CPU's AVX-512 BF16)
    max_minutes: float = 60.0
    seed: int = 0
    out: str = str(WEIGHTS)
    checkpoint: str = str(ROOT / "var" / "checkpoints" / "decoder.pt")


# ---------------------------------------------------------------------- data


def concept_sprites(n: int, seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
    """(n, 16, 16, 4) sprites the sprite generator draws for n concepts, and which give light."""
    from inference.world.reading import Reader

    reader = Reader.load()
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(reader.concepts), min(n, len(reader.concepts)), replace=False)
    concepts = [reader.concepts[i] for i in picked]
    table = np.stack([reader.sprite(c) for c in concepts]).astype(np.float32) / 255.0
    return torch.from_numpy(table), np.array([c.light for c in concepts])


def batch(rng, n: int, frame: int, cfg: DecoderTrainConfig, table, lit, seeds=None) -> tuple:
    """(decoder inputs, things or None, teacher frames (n, F', F', 3) in [0, 1])."""
    kw = {"seeds": seeds} if seeds else {}
    scene, _ = sim.random_scenes(rng, n, frame=frame, covers=cfg.covers, **kw)
    things = None
    if rng.random() < cfg.things or cfg.things >= 1:
        slots = np.full((n, MAX_OBJECTS, 3), -1, np.int64)
        lights = np.full((n, MAX_LIGHTS, 2), -1, np.int64)
        for i in range(n):
            k = rng.integers(0, 5)
            rows = rng.integers(0, len(table), k)
            slots[i, :k, 0] = rows
            slots[i, :k, 1:] = rng.integers(-12, frame - 4, (k, 2))
            lit_at = [
                (x + 8, y + 8) for r, (x, y) in zip(rows, slots[i, :k, 1:], strict=True) if lit[r]
            ]
            fires = fire_lights(scene.tokens[i], *scene.offset[i])
            pts = (lit_at + fires)[:MAX_LIGHTS]
            if pts:
                lights[i, : len(pts)] = pts
        things = (torch.from_numpy(slots), table, torch.from_numpy(lights))
    target = sim.render_rich(scene, None if things is None else tuple(t.numpy() for t in things))
    inputs = tuple(
        torch.from_numpy(np.asarray(a))
        for a in (scene.tokens, scene.offset, scene.weather, scene.minute, scene.phase)
    ) + (torch.from_numpy(scene.sprites),)
    tgt = torch.from_numpy(target).float() / 255.0
    return inputs, things, tgt


# ---------------------------------------------------------------------- measures


def psnr(a: torch.Tensor, b: torch.Tensor) -> float:
    mse = F.mse_loss(a.float(), b.float()).item()
    return 10 * np.log10(1.0 / max(mse, 1e-12))


def ssim(a: torch.Tensor, b: torch.Tensor) -> float:
    """Mean SSIM of the grey frames (B, H, W, 3) (an 11-pixel Gaussian window, the usual
    constants)."""
    w = torch.tensor([0.299, 0.587, 0.114])
    x, y = (t.float().mul(w).sum(-1)[:, None] for t in (a, b))
    g = torch.exp(-((torch.arange(11) - 5.0) ** 2) / (2 * 1.5**2))
    g = (g / g.sum())[None, None]
    k = (g[..., None, :] * g[..., :, None]).view(1, 1, 11, 11)

    def blur(t):
        return F.conv2d(t, k)

    mx, my = blur(x), blur(y)
    sxx, syy, sxy = blur(x * x) - mx**2, blur(y * y) - my**2, blur(x * y) - mx * my
    c1, c2 = 0.01**2, 0.03**2
    s = ((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx**2 + my**2 + c1) * (sxx + syy + c2))
    return s.mean().item()


@torch.no_grad()
def evaluate(model: FrameDecoder, cfg: DecoderTrainConfig, table, lit, bf16: bool) -> dict:
    """On worlds of unseen seeds, full 128-pixel views drawn at 192: PSNR and SSIM against
    the teacher, and the shimmer of a still camera in clear weather (mean absolute change
    between the frames of two consecutive minutes, grey levels) beside the teacher's own."""
    model.eval()
    rng = np.random.default_rng(12345)
    outs, tgts = [], []
    for _ in range(max(1, cfg.eval_frames // 8)):
        inputs, things, tgt = batch(rng, 8, spec.FRAME, cfg, table, lit, EVAL_SEEDS)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out = model(*inputs, things=things).float().clamp(0, 1)
        outs.append(out)
        tgts.append(tgt)
    out, tgt = torch.cat(outs), torch.cat(tgts)
    # still camera, clear weather: minute m then m + 1
    scene, _ = sim.random_scenes(rng, 16, frame=spec.FRAME, seeds=EVAL_SEEDS)
    scene.weather[:] = spec.WEATHERS.index("clear")
    a = _draw(model, scene, bf16)
    t_a = sim.render_rich(scene)
    scene.minute = (scene.minute + 1) % spec.DAY_MINUTES
    b = _draw(model, scene, bf16)
    t_b = sim.render_rich(scene)
    model.train()
    return {
        "psnr": round(psnr(out, tgt), 2),
        "ssim": round(ssim(out, tgt), 4),
        "shimmer": round(float(np.abs(a.astype(int) - b.astype(int)).mean()), 3),
        "teacher_shimmer": round(float(np.abs(t_a.astype(int) - t_b.astype(int)).mean()), 3),
    }


def _draw(model: FrameDecoder, scene, bf16: bool) -> np.ndarray:
    inputs = [
        torch.from_numpy(np.asarray(a))
        for a in (scene.tokens, scene.offset, scene.weather, scene.minute, scene.phase)
    ] + [torch.from_numpy(scene.sprites)]
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        out = model(*inputs).float()
    return (out.clamp(0, 1) * 255 + 0.5).to(torch.uint8).numpy()


# ---------------------------------------------------------------------- the loop


def init_from_renderer(model: FrameDecoder) -> None:
    """Start the sprite and particle tables from the shipped atlas renderer's (trained on the
    same simulator sprites): the decoder pastes them from the first step."""
    from inference.world.model import WorldModel

    wm = WorldModel.from_file(WEIGHTS / "world_model.safetensors")
    with torch.no_grad():
        model.sprites.copy_(wm.renderer.sprites)
        model.overlay.copy_(wm.renderer.overlay)


def save_checkpoint(path: Path, model, opt, step: int, cfg) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(
        {
            "model": model.state_dict(),
            "opt": opt.state_dict(),
            "step": step,
            "config": asdict(cfg),
            "model_config": asdict(model.cfg),
        },
        tmp,
    )
    tmp.replace(path)  # an interrupted save never corrupts the last checkpoint


def train(cfg: DecoderTrainConfig, resume: bool = False) -> dict:
    keep_freed_memory()
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    ckpt_path = Path(cfg.checkpoint)
    model = FrameDecoder(DecoderConfig())
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=1e-4)
    start = 0
    if resume and ckpt_path.exists():
        state = torch.load(ckpt_path, weights_only=False)
        model = FrameDecoder(DecoderConfig(**state["model_config"]))
        model.load_state_dict(state["model"])
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=1e-4)
        opt.load_state_dict(state["opt"])
        start = state["step"]
    elif resume and (Path(cfg.out) / CONFIG_FILE).exists():
        # a fresh checkout has no checkpoint (var/ is not in the repository): go on from the
        # shipped weights and their step count, with a fresh optimizer
        model = FrameDecoder.load(cfg.out).train()
        model.thaw()
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=1e-4)
        start = json.loads((Path(cfg.out) / CONFIG_FILE).read_text()).get("steps_done", 0)
    else:
        init_from_renderer(model)
    table, lit = concept_sprites(cfg.concepts, cfg.seed)
    rng = np.random.default_rng(cfg.seed + start)  # a resumed run draws new scenes
    model.train()
    began = time.monotonic()
    metrics: dict = {}
    bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps, desc="decoder")
    step = start
    for step in bar:
        lr = cfg.lr * min(1.0, (step + 1) / cfg.warmup) * cosine(step, cfg.steps)
        for g in opt.param_groups:
            g["lr"] = lr
        inputs, things, tgt = batch(rng, cfg.batch, cfg.frame, cfg, table, lit)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cfg.bf16):
            out = model(*inputs, things=things)
        out = out.float()
        loss = F.l1_loss(out, tgt) + F.mse_loss(out, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        bar.set_postfix(loss=f"{loss.item():.4f}", psnr=f"{psnr(out.detach(), tgt):.1f}")
        done = (time.monotonic() - began) / 60 > cfg.max_minutes
        if (step + 1) % cfg.eval_every == 0 or done or step + 1 == cfg.steps:
            save_checkpoint(ckpt_path, model, opt, step + 1, cfg)
            metrics = {"step": step + 1, **evaluate(model, cfg, table, lit, cfg.bf16)}
            tqdm.write(json.dumps(metrics))
            model.thaw()
            model.save(cfg.out, {"steps_done": step + 1, "eval": metrics, "train": _kept(cfg)})
        if done:
            tqdm.write(f"stopping at step {step + 1}: the {cfg.max_minutes}-minute budget ran out")
            break
    return metrics


def _kept(cfg: DecoderTrainConfig) -> dict:
    """The run's configuration as the weights keep it (not this machine's paths)."""
    return {k: v for k, v in asdict(cfg).items() if k not in ("out", "checkpoint")}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for f in fields(DecoderTrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if isinstance(f.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            parser.add_argument(flag, type=type(f.default), default=f.default)
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint")
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume")
    print(json.dumps(train(DecoderTrainConfig(**args), resume=resume)))


if __name__ == "__main__":
    main()
