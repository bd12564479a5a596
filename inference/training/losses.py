"""One training step's losses, one per part (their parameters are disjoint), and the quick check
run every `eval_every` steps."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from inference.training import simulator as sim
from inference.training.batches import (
    biome_target,
    classifier_batch,
    classifier_loss,
    encoder_batch,
    frame_biome,
    generator_batch,
    render_loss,
    scene_tensors,
)
from inference.world import spec


def text_loss(heads, text, kind: str, batch: int, device, gen=None) -> torch.Tensor:
    """Cross-entropy of every head of ``kind`` ("prompt" or "event") on a batch of embedded
    phrasings; a prompt naming two biomes means half of each."""
    emb = text[f"{kind}_emb"]
    pick = torch.randint(len(emb), (batch,), generator=gen)
    # a little embedding noise: free text lands near, not on, the training phrasings
    noise = torch.randn(emb[pick].shape, generator=gen)
    x = F.normalize(emb[pick] + 0.02 * noise, dim=-1).to(device)
    logits = heads(x)
    targets = {k: text[f"{kind}_{k}"][pick].to(device) for k in logits}
    if kind == "prompt":
        b2 = text["prompt_biome2"][pick]
        targets["biome"] = biome_target(targets["biome"].cpu(), b2, 0.5 * torch.ones(len(b2)))
        targets["biome"] = targets["biome"].to(device)
    return sum(F.cross_entropy(logits[k], targets[k]) for k in logits)


def losses(
    step_rng, cfg, mcfg, model, classifier, text, prompts, device
) -> dict[str, torch.Tensor]:
    out = {}
    # renderer: simulator scene -> simulator frame
    scene, _ = sim.random_scenes(
        step_rng, cfg.batch_render, max_sprites=cfg.render_sprites, frame=cfg.render_frame
    )
    out["render"] = render_loss(model.renderer, scene, device)
    # generator
    ctx, spawn, probs, gtext, tokens, masked = generator_batch(
        step_rng, cfg, mcfg, model, prompts, device
    )
    logits = model.generator(ctx, spawn, probs, gtext).permute(0, 2, 3, 1)[masked]
    out["gen"] = F.cross_entropy(logits, tokens[masked])
    # collision head
    all_tokens = torch.arange(spec.NUM_TOKENS, device=device)
    solid = torch.tensor([spec.is_solid_token(t) for t in range(spec.NUM_TOKENS)], device=device)
    out["solid"] = F.binary_cross_entropy_with_logits(model.collision(all_tokens), solid.float())
    # text heads
    out["prompt"] = text_loss(model.prompt_heads, text, "prompt", cfg.batch_text, device)
    out["event"] = text_loss(model.event_heads, text, "event", cfg.batch_text, device)
    # evaluation classifier and codec encoder: simulator frames only
    frames, scene, cells = classifier_batch(
        step_rng, cfg.batch_cls, device, mixed=cfg.cls_mixed, remap=cfg.cls_remap
    )
    out["cls"] = classifier_loss(classifier, frames, scene, cells, device)
    patches, ptokens, eframes, eweather, ehalf = encoder_batch(step_rng, cfg.batch_cls // 2, device)
    heads = model.encoder.frame(eframes)
    out["enc"] = (
        F.cross_entropy(model.encoder.patch_logits(patches), ptokens)
        + F.cross_entropy(heads["weather"], eweather)
        + F.cross_entropy(heads["minute"], ehalf)
    )
    return out


@torch.no_grad()
def quick_eval(cfg, mcfg, model, classifier, prompts, device) -> dict[str, float]:
    """Fresh simulator data: renderer PSNR, generator token accuracy, classifier accuracy."""
    model.eval()
    classifier.eval()
    rng = np.random.default_rng(10_000 + cfg.seed)
    scene, _ = sim.random_scenes(rng, 64)
    target = torch.from_numpy(sim.render(scene)).float().div(255).to(device)
    pred = model.renderer(*scene_tensors(scene, device)).clamp(0, 1)
    mse = F.mse_loss((pred * 255).round() / 255, target).item()
    ctx, spawn, probs, gtext, tokens, masked = generator_batch(
        rng, cfg, mcfg, model, prompts, device
    )
    gen_acc = (
        model.generator(ctx, spawn, probs, gtext).argmax(1)[masked] == tokens[masked]
    ).float()
    frames, scene, cells = classifier_batch(rng, 128, device)
    logits = classifier(frames)
    acc = (logits["biome"].argmax(1) == frame_biome(cells)).float().mean().item()
    model.train()
    classifier.train()
    return {
        "render_psnr": 10 * math.log10(1 / max(mse, 1e-10)),
        "gen_acc": gen_acc.mean().item(),
        "cls_biome_acc": acc,
    }
