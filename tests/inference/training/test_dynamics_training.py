"""The dynamics' training command: it runs, resumes and writes weights the engine can load."""

from __future__ import annotations

import json

import numpy as np
import torch
from safetensors import safe_open

from inference.training import dynamics as training
from inference.training.simulator.dynamics import random_tile_batch, teacher_tile_probs
from inference.world.dynamics import Dynamics, DynamicsConfig, DynamicsModel


def test_it_trains_resumes_and_writes_weights_with_their_config(tmp_path):
    out, ckpt = tmp_path / "dyn.safetensors", tmp_path / "ck" / "dyn.pt"
    cfg = training.DynamicsTrainConfig(
        steps=3, tile_batch=4, creature_batch=8, out=str(out), checkpoint=str(ckpt)
    )
    small = DynamicsConfig(width=8, hidden=16)
    training.train(cfg, small)
    assert torch.load(ckpt, weights_only=False)["step"] == 3
    training.train(training.DynamicsTrainConfig(**{**vars(cfg), "steps": 5}), small, resume=True)
    assert torch.load(ckpt, weights_only=False)["step"] == 5
    with safe_open(str(out), framework="pt") as f:
        meta = f.metadata()
    assert json.loads(meta["config"])["width"] == 8 and meta["steps"] == "5"
    loaded = Dynamics.load(out)
    assert loaded.model.cfg.width == 8


def test_a_step_lowers_the_loss_of_a_fixed_batch():
    torch.manual_seed(0)
    cfg = training.DynamicsTrainConfig(lr=1e-2)
    model = DynamicsModel(DynamicsConfig(width=8, hidden=16))
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    batch = random_tile_batch(np.random.default_rng(0), 8, (0, 2**30))
    target = training.floored(teacher_tile_probs(batch)[0])
    losses = []
    for _ in range(30):
        logp = torch.log_softmax(model.tile_logits(batch)[:, :-1], 1).permute(0, 2, 3, 1)
        loss = sum(training.fit_loss(logp, target, cfg).values())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
