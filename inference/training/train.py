"""Train the world model from scratch on data the reference simulator makes on the fly.

    python -m inference.training.train                      # shipped config: 2-core CPU
    python -m inference.training.train --resume             # continue from var/checkpoints/
    python -m inference.training.train --steps 20 --out /tmp/w   # smoke run

The shipped configuration trains in about 30 minutes on two shared CPU cores (well inside 90
minutes on an idle 2-core machine). A larger configuration for a GPU:

    python -m inference.training.train --device cuda --steps 30000 --gen-dim 128 --gen-layers 8 \\
        --batch-gen 256 --batch-render 128 --max-minutes 120

All parts train together, each on its own loss (their parameters are disjoint):
- text heads: MiniLM embeddings of simulator world/event phrasings -> labels;
- renderer: simulator scenes -> the simulator's frames (MSE), on 64x64 crops (the renderer
  is the same function at every frame size; the engine serves 128x128);
- collision head: tile tokens -> solid;
- terrain generator: MaskGIT on 16x16-tile windows (one chunk plus its neighbours' margin) of
  one biome or two mixed, conditioned on the biome mix and on the MiniLM embedding of a prompt
  that names them, with neighbours dropped at random and *self-forcing*: part of the context
  is replaced by the generator's own samples, so it learns to continue its own canvas;
- codec encoder (patch -> token, frame -> atmosphere and half hour) and the evaluation's frame
  classifier (biome / atmosphere / time of day), both on simulator frames only.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import fields
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from inference.training.batches import PromptIndex, text_dataset
from inference.training.calibrate import calibrate_kinds
from inference.training.checkpoints import export, read_meta, save_checkpoint, write_meta
from inference.training.config import TrainConfig, cosine
from inference.training.finetune import (
    fit_covers,
    fit_light,
    fit_sprites,
    polish_renderer,
    train_classifier,
    train_prompt_heads,
)
from inference.training.losses import losses, quick_eval
from inference.world.model import (
    FrameClassifier,
    ModelConfig,
    WorldModel,
)

# ---------------------------------------------------------------- loop


def train(cfg: TrainConfig, mcfg: ModelConfig, resume: bool = False) -> dict:
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    device = torch.device(cfg.device)
    model = WorldModel(mcfg).to(device).train()
    classifier = FrameClassifier().to(device).train()
    params = list(model.parameters()) + list(classifier.parameters())
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    start = 0
    ckpt = Path(cfg.checkpoint)
    if resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        classifier.load_state_dict(state["classifier"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        print(f"resumed from {ckpt} at step {start}")
    text = text_dataset(cfg)
    prompts = PromptIndex(text)
    rng = np.random.default_rng(cfg.seed * 1_000_003 + start)  # resumes draw fresh data
    began = time.time()
    history = []
    bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps, desc="train")
    step = start
    for step in bar:
        lr = cfg.lr * min(1.0, (step + 1) / cfg.warmup)
        lr *= cosine(step, cfg.steps)
        for group in opt.param_groups:
            group["lr"] = lr
        parts = losses(rng, cfg, mcfg, model, classifier, text, prompts, device)
        loss = sum(parts.values())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        bar.set_postfix({k: f"{v.item():.3f}" for k, v in parts.items()})
        last = step + 1 == cfg.steps
        out_of_time = (time.time() - began) / 60 > cfg.max_minutes
        if (step + 1) % cfg.eval_every == 0 or last or out_of_time:
            metrics = quick_eval(cfg, mcfg, model, classifier, prompts, device)
            metrics.update(
                step=step + 1,
                minutes=round((time.time() - began) / 60, 2),
                **{k: round(v.item(), 4) for k, v in parts.items()},
            )
            history.append(metrics)
            tqdm.write(json.dumps(metrics))
            save_checkpoint(ckpt, model, classifier, opt, step + 1, cfg, mcfg)
        if out_of_time:
            tqdm.write(f"stopping at step {step + 1}: {cfg.max_minutes} minute budget reached")
            break
    save_checkpoint(ckpt, model, classifier, opt, step + 1, cfg, mcfg)
    export(model, classifier, cfg, mcfg, history, step + 1)
    return history[-1] if history else {}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for dc in (TrainConfig, ModelConfig):
        for f in fields(dc):
            flag = "--" + f.name.replace("_", "-")
            if any(flag == a.option_strings[0] for a in parser._actions if a.option_strings):
                continue
            parser.add_argument(flag, type=type(f.default), default=f.default)
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint")
    parser.add_argument(
        "--train-classifier",
        type=int,
        default=0,
        metavar="STEPS",
        help="only train the evaluation's frame classifier for STEPS more steps",
    )
    parser.add_argument(
        "--polish-renderer",
        type=int,
        default=0,
        metavar="STEPS",
        help="only run STEPS renderer-only steps on the exported weights",
    )
    parser.add_argument(
        "--fit-light",
        type=int,
        default=0,
        metavar="STEPS",
        help="only fit the renderer's light of the day for STEPS steps, on the exported weights",
    )
    parser.add_argument(
        "--fit-sprites",
        type=int,
        default=0,
        metavar="STEPS",
        help="only fit the renderer's sprite textures for STEPS steps, on the exported weights",
    )
    parser.add_argument(
        "--fit-covers",
        type=int,
        default=0,
        metavar="STEPS",
        help="only fit the renderer's rows of the covers (fire, ash, puddle, snow) for STEPS "
        "steps, on the exported weights",
    )
    parser.add_argument(
        "--train-prompt-heads",
        type=int,
        default=0,
        metavar="STEPS",
        help="only train the prompt heads for STEPS more steps, on the exported weights",
    )
    parser.add_argument(
        "--calibrate-kinds",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="only fit the generator's sampling bias to the simulator's tile kind mix, on the "
        "exported weights",
    )
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume")
    polish = args.pop("polish_renderer")
    classifier_steps = args.pop("train_classifier")
    head_steps = args.pop("train_prompt_heads")
    light_steps = args.pop("fit_light")
    sprite_steps = args.pop("fit_sprites")
    cover_steps = args.pop("fit_covers")
    kind_rounds = args.pop("calibrate_kinds")
    cfg = TrainConfig(**{f.name: args[f.name] for f in fields(TrainConfig)})
    mcfg = ModelConfig(**{f.name: args[f.name] for f in fields(ModelConfig)})
    if polish:
        polish_renderer(cfg, polish)
        return
    if light_steps:
        fit_light(cfg, light_steps)
        return
    if sprite_steps:
        fit_sprites(cfg, sprite_steps)
        return
    if cover_steps:
        fit_covers(cfg, cover_steps)
        return
    if classifier_steps:
        train_classifier(cfg, classifier_steps)
        return
    if kind_rounds:
        meta = read_meta(cfg.out)
        fit = calibrate_kinds(cfg.out, kind_rounds, extra={"steps": str(meta.get("steps_done"))})
        meta["kind_calibration"] = {"rounds": kind_rounds, **fit}
        write_meta(cfg.out, meta)
        print(json.dumps(fit))
        return
    if head_steps:
        train_prompt_heads(cfg, head_steps)
        return
    print(json.dumps(train(cfg, mcfg, resume=resume)))


if __name__ == "__main__":
    main()
