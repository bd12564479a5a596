from pathlib import Path

import numpy as np
import torch

from inference.training import train as training
from inference.world.model import FrameClassifier, ModelConfig, WorldModel


def small_configs(tmp_path):
    cfg = training.TrainConfig(
        steps=4,
        batch_render=4,
        batch_gen=8,
        batch_cls=8,
        batch_text=32,
        n_prompts=48,
        n_events=48,
        eval_every=1000,
        max_minutes=5,
        out=str(tmp_path / "weights"),
        checkpoint=str(tmp_path / "ck" / "model.pt"),
    )
    return cfg, ModelConfig(gen_dim=16, gen_layers=2, text_hidden=32)


def test_a_few_training_steps_lower_the_loss(tmp_path):
    torch.manual_seed(0)
    cfg, mcfg = small_configs(tmp_path)
    model, classifier = WorldModel(mcfg), FrameClassifier()
    text = training.text_dataset(cfg)
    params = list(model.parameters()) + list(classifier.parameters())
    opt = torch.optim.AdamW(params, lr=3e-3)

    def fixed_loss() -> float:
        with torch.no_grad():
            parts = training.losses(
                np.random.default_rng(7), cfg, mcfg, model, classifier, text, "cpu"
            )
        return float(sum(parts.values()))

    before = fixed_loss()
    rng = np.random.default_rng(0)
    for _ in range(25):
        loss = sum(training.losses(rng, cfg, mcfg, model, classifier, text, "cpu").values())
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert fixed_loss() < before


def test_training_resumes_from_its_checkpoint_and_exports_weights(tmp_path):
    cfg, mcfg = small_configs(tmp_path)
    cfg.steps = 2
    training.train(cfg, mcfg)
    cfg.steps = 3
    training.train(cfg, mcfg, resume=True)
    assert torch.load(cfg.checkpoint, weights_only=False)["step"] == 3
    model = WorldModel.from_file(tmp_path / "weights" / "world_model.safetensors")
    assert model.cfg == mcfg


def test_exported_config_records_repository_paths_relative_to_it(tmp_path):
    import json

    inside = training.TrainConfig(out=str(training.ROOT / "inference" / "weights"))
    recorded = training._portable(training.asdict(inside))
    assert recorded["out"] == "inference/weights"
    assert recorded["checkpoint"] == "var/checkpoints/world_model.pt"
    outside = training._portable(training.asdict(training.TrainConfig(out=str(tmp_path))))
    assert outside["out"] == str(tmp_path)  # elsewhere the full path is the useful one
    shipped = json.loads((training.ROOT / "inference" / "weights" / "config.json").read_text())
    assert not Path(shipped["train"]["out"]).is_absolute()
    assert not Path(shipped["train"]["checkpoint"]).is_absolute()
