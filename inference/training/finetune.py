"""Passes that retrain one part of the exported weights alone (renderer, light, sprites, prompt
heads, the judge), each recording its steps in config.json."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from inference.training import simulator as sim
from inference.training.batches import (
    classifier_batch,
    classifier_loss,
    frame_biome,
    render_loss,
    scene_tensors,
    text_dataset,
    to_t,
)
from inference.training.checkpoints import read_meta, write_meta
from inference.training.config import TrainConfig, cosine
from inference.training.losses import text_loss
from inference.world import spec
from inference.world.model import (
    WorldModel,
    load_classifier,
    save_classifier,
)


def polish_renderer(cfg: TrainConfig, steps: int) -> None:
    """Extra renderer-only steps on sprite-dense scenes, on the exported weights.

    Sprites cover few pixels and their alpha is hard (0 or 1): a sprite whose alpha starts
    below one half draws nothing, so its colour gets no gradient and a bright sprite never
    appears. The first half of these steps learns the sprites with a soft alpha, the second
    half with the hard alpha the engine draws, so the colours fit the clean edges."""
    torch.set_num_threads(cfg.threads)
    path = Path(cfg.out) / "world_model.safetensors"
    model = WorldModel.from_file(path).train()
    r = model.renderer
    rest = [p for n, p in r.named_parameters() if n != "sprites"]
    # a larger step on the sprite texture: it sees few pixels per frame
    opt = torch.optim.AdamW(
        [{"params": rest, "lr": cfg.lr * 0.5}, {"params": [r.sprites], "lr": 0.02}],
        weight_decay=0.0,
    )
    rng = np.random.default_rng(cfg.seed + 77)
    bar = tqdm(range(steps), desc="polish renderer")
    for step in bar:
        r.soft_alpha = step < steps // 2
        scene, _ = sim.random_scenes(
            rng, cfg.batch_render, sprite_prob=1.0, frame=cfg.render_frame, things=0.05
        )
        loss = render_loss(model.renderer, scene)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        bar.set_postfix(render=f"{loss.item():.4f}", alpha="soft" if r.soft_alpha else "hard")
    r.soft_alpha = False
    meta = read_meta(cfg.out)
    meta["renderer_polish_steps"] = meta.get("renderer_polish_steps", 0) + steps
    write_meta(cfg.out, meta)
    model.eval().save(path, extra={"steps": str(meta.get("steps_done")), "polish": str(steps)})
    print(f"polished renderer saved to {path}")


def fit_light(cfg: TrainConfig, steps: int) -> None:
    """Renderer steps on its light of the day alone (the 48 half-hour entries), on the exported
    weights, at minutes drawn evenly over the day: after the simulator's light changes, the
    rest of the renderer (textures, sprites, atmospheres) need not learn again."""
    torch.set_num_threads(cfg.threads)
    path = Path(cfg.out) / "world_model.safetensors"
    model = WorldModel.from_file(path).train()
    r = model.renderer
    opt = torch.optim.AdamW([r.light], lr=0.02, weight_decay=0.0)
    rng = np.random.default_rng(cfg.seed + 55)
    bar = tqdm(range(steps), desc="fit light")
    for step in bar:
        opt.param_groups[0]["lr"] = 0.02 * cosine(step, steps)
        scene, _ = sim.random_scenes(rng, cfg.batch_render, frame=cfg.render_frame, things=0.05)
        scene.minute[:] = rng.integers(0, spec.DAY_MINUTES, len(scene.minute))
        loss = render_loss(model.renderer, scene)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        bar.set_postfix(render=f"{loss.item():.4f}")
    meta = read_meta(cfg.out)
    meta["light_fit_steps"] = meta.get("light_fit_steps", 0) + steps
    write_meta(cfg.out, meta)
    model.eval().save(path, extra={"steps": str(meta.get("steps_done")), "light": str(steps)})
    print(f"renderer light saved to {path}")


def sprite_errors(model: WorldModel, rng, scenes: int = 64) -> dict[str, float]:
    """Mean absolute error (0-255) of the frames against the simulator on the pixels each
    sprite kind covers, one kind at a time (scenes full of it, hard alpha as the engine
    draws): a sprite drawn wrong, or not at all, stands out here as nowhere else."""
    out = {}
    kinds = [f"avatar {i}" for i in range(spec.AVATAR_COLORS)] + list(spec.CREATURES)
    with torch.no_grad():
        for kind, name in enumerate(kinds):
            scene, _ = sim.random_scenes(rng, scenes, sprite_prob=1.0, frame=64, things=0.0)
            scene.sprites[:, :, 0] = np.where(scene.sprites[:, :, 0] >= 0, kind, -1)
            target = sim.render(scene).astype(np.float64)
            drawn = model.renderer(*scene_tensors(scene)).clamp(0, 1).numpy() * 255
            cover = sim.sprite_cover(scene)
            out[name] = float(np.abs(drawn - target)[cover].mean()) if cover.any() else 0.0
    return out


def fit_sprites(cfg: TrainConfig, steps: int) -> dict[str, dict[str, float]]:
    """Renderer steps on its sprite textures alone, on the exported weights, on scenes full of
    sprites: soft alpha for the first half, then the hard alpha the engine draws (as
    ``polish_renderer``, without moving the tiles, light or atmospheres): for a sprite the
    polish left wrong (the rabbit's drew a few grey dots). -> per-kind error before and after."""
    torch.set_num_threads(cfg.threads)
    path = Path(cfg.out) / "world_model.safetensors"
    model = WorldModel.from_file(path).train()
    r = model.renderer
    before = sprite_errors(model, np.random.default_rng(cfg.seed + 91))
    opt = torch.optim.AdamW([r.sprites], lr=0.02, weight_decay=0.0)
    rng = np.random.default_rng(cfg.seed + 66)
    bar = tqdm(range(steps), desc="fit sprites")
    for step in bar:
        opt.param_groups[0]["lr"] = 0.02 * cosine(step, steps)
        r.soft_alpha = step < steps // 2
        scene, _ = sim.random_scenes(
            rng, cfg.batch_render, sprite_prob=1.0, frame=cfg.render_frame, things=0.05
        )
        loss = render_loss(r, scene)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        bar.set_postfix(render=f"{loss.item():.4f}", alpha="soft" if r.soft_alpha else "hard")
    r.soft_alpha = False
    model.eval()
    r.freeze()
    after = sprite_errors(model, np.random.default_rng(cfg.seed + 91))
    for name in before:
        print(f"{name:>12}: sprite error {before[name]:5.1f} -> {after[name]:5.1f}")
    meta = read_meta(cfg.out)
    meta["sprite_fit_steps"] = meta.get("sprite_fit_steps", 0) + steps
    write_meta(cfg.out, meta)
    model.save(path, extra={"steps": str(meta.get("steps_done")), "sprites": str(steps)})
    print(f"renderer sprites saved to {path}")
    return {"before": before, "after": after}


def cover_pixels(scene: sim.Scene) -> np.ndarray:
    """(B, F, F) int: the cover each frame pixel's tile lies under (0: none)."""
    b, t, f = len(scene.weather), spec.TILE, scene.frame
    cover = np.where(
        scene.tokens >= spec.FIRST_COVER_TOKEN, scene.tokens - spec.FIRST_COVER_TOKEN + 1, 0
    )
    big = cover.repeat(t, 1).repeat(t, 2)  # (B, 8W, 8W)
    ys = t + scene.offset[:, 1, None] + np.arange(f)  # (B, F): as `sim.render` crops
    xs = t + scene.offset[:, 0, None] + np.arange(f)
    return big[np.arange(b)[:, None, None], ys[:, :, None], xs[:, None, :]]


def drawn_frames(model: WorldModel, scene: sim.Scene) -> np.ndarray:
    """The frames the engine would serve of a scene (uint8, from the frozen tables)."""
    model.renderer.freeze()
    frames = model.renderer.frames(*scene_tensors(scene)).numpy()
    model.renderer.thaw()
    return frames


def cover_psnr(model: WorldModel, scenes: int = 96) -> dict[str, float]:
    """PSNR (dB) of the served frames against the simulator's on the pixels of each cover's
    tiles (and of them all), scenes of unseen seeds under every light and atmosphere."""
    from inference.training.evaluation.measures import EVAL_SEEDS, psnr

    rng = np.random.default_rng(4_848)
    scene, _ = sim.random_scenes(rng, scenes, sprite_prob=0.0, seeds=EVAL_SEEDS, covers=0.3)
    drawn, target, cover = drawn_frames(model, scene), sim.render(scene), cover_pixels(scene)
    out = {c: psnr(drawn, target, cover == i) for i, c in enumerate(spec.COVERS) if i}
    out["all covers"] = psnr(drawn, target, cover > 0)
    return {k: round(v, 2) for k, v in out.items()}


def uncovered_scenes() -> sim.Scene:
    """Fixed scenes with no cover in view (sprites, things, every atmosphere): the frames a
    cover fit must leave as they were, bit for bit."""
    scene, _ = sim.random_scenes(np.random.default_rng(4_849), 32, frame=spec.FRAME)
    return scene


def fit_covers(cfg: TrainConfig, steps: int) -> dict[str, dict[str, float]]:
    """Renderer steps on the covers' token rows and their detail patches alone (fire, ash,
    puddle, snow), on the exported weights, on random scenes with covers sprinkled over their
    tiles under every light and atmosphere. Nothing else moves (the tile MLP, light and
    atmospheres are shared by every token), so frames without a cover stay bit-identical:
    checked, and the run fails otherwise. -> the covers' PSNR before and after."""
    torch.set_num_threads(cfg.threads)
    path = Path(cfg.out) / "world_model.safetensors"
    model = WorldModel.from_file(path)
    r = model.renderer
    before = cover_psnr(model)
    kept = uncovered_scenes()
    kept_frames = drawn_frames(model, kept)
    old_rows = r.tok.weight[: spec.FIRST_COVER_TOKEN].detach().clone()
    for p in model.parameters():
        p.requires_grad_(False)
    r.tok.weight.requires_grad_(True)
    r.cover_detail.requires_grad_(True)
    # only the cover rows learn: the others get no gradient, so Adam (no weight decay) leaves
    # them exactly as they were
    rows = torch.zeros(spec.RENDER_TOKENS, 1)
    rows[spec.FIRST_COVER_TOKEN :] = 1.0
    r.tok.weight.register_hook(lambda grad: grad * rows)
    # the detail patches draw what the shared MLP cannot (fire's flame tongues)
    opt = torch.optim.AdamW(
        [{"params": [r.tok.weight], "lr": 0.02}, {"params": [r.cover_detail], "lr": 0.01}],
        weight_decay=0.0,
    )
    base_lr = [g["lr"] for g in opt.param_groups]
    rng = np.random.default_rng(cfg.seed + 48)
    model.train()
    bar = tqdm(range(steps), desc="fit covers")
    for step in bar:
        for group, lr in zip(opt.param_groups, base_lr, strict=True):
            group["lr"] = lr * cosine(step, steps)
        scene, _ = sim.random_scenes(
            rng, cfg.batch_render, sprite_prob=0.3, frame=cfg.render_frame, covers=0.4
        )
        scene.minute[:] = rng.integers(0, spec.DAY_MINUTES, len(scene.minute))
        loss = render_loss(r, scene)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        bar.set_postfix(render=f"{loss.item():.4f}")
    model.eval()
    r.tok.weight.requires_grad_(False)
    r.cover_detail.requires_grad_(False)
    if not torch.equal(r.tok.weight[: spec.FIRST_COVER_TOKEN], old_rows):
        raise RuntimeError("the fit moved a renderer row other than the covers'")
    if not np.array_equal(drawn_frames(model, kept), kept_frames):
        raise RuntimeError("the fit changed frames that show no cover")
    after = cover_psnr(model)
    for name in before:
        print(f"{name:>12}: PSNR {before[name]:5.2f} -> {after[name]:5.2f} dB")
    meta = read_meta(cfg.out)
    meta["cover_fit_steps"] = meta.get("cover_fit_steps", 0) + steps
    meta["cover_psnr"] = {"before": before, "after": after}
    write_meta(cfg.out, meta)
    model.save(path, extra={"steps": str(meta.get("steps_done")), "covers": str(steps)})
    print(f"renderer covers saved to {path}")
    return {"before": before, "after": after}


def train_prompt_heads(cfg: TrainConfig, steps: int, check: int = 720) -> dict[str, float]:
    """Extra steps for the prompt heads alone (biome, mixed, atmosphere, time, creature), on
    the exported weights and the current phrasing banks; the rest of the model is untouched
    (the generator's condition is the biome mix and the embedding, not these heads).
    -> accuracy per head on ``check`` fresh eval-split prompts (printed before and after)."""
    torch.set_num_threads(cfg.threads)
    path = Path(cfg.out) / "world_model.safetensors"
    model = WorldModel.from_file(path)
    text = text_dataset(cfg)
    before = prompt_head_accuracy(model, check)
    heads = model.prompt_heads.train()
    opt = torch.optim.AdamW(heads.parameters(), lr=cfg.lr * 0.3, weight_decay=0.0)
    gen = torch.Generator().manual_seed(cfg.seed + 7)
    bar = tqdm(range(steps), desc="train prompt heads")
    for step in bar:
        for group in opt.param_groups:
            group["lr"] = cfg.lr * 0.3 * cosine(step, steps)
        loss = text_loss(heads, text, "prompt", cfg.batch_text, "cpu", gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        bar.set_postfix(prompt=f"{loss.item():.3f}")
    heads.eval()
    after = prompt_head_accuracy(model, check)
    meta = read_meta(cfg.out)
    model.save(path, extra={"steps": str(meta.get("steps_done"))})
    meta["prompt_head_steps"] = meta.get("prompt_head_steps", 0) + steps
    meta["prompt_head_prompts"] = cfg.n_prompts
    meta["prompt_head_accuracy"] = after
    write_meta(cfg.out, meta)
    print(f"prompt heads saved to {path}: before {before}, after {after}")
    return after


@torch.no_grad()
def prompt_head_accuracy(model: WorldModel, n: int = 720) -> dict[str, float]:
    """Share of fresh eval-split world prompts (held-out phrasings half the time) each
    prompt head reads right (biome: the first named is the top class)."""
    from inference.world import text as text_encoder

    rng = np.random.default_rng(424_242)
    prompts = [sim.world_prompt(rng, "eval") for _ in range(n)]
    emb = torch.from_numpy(text_encoder.embed([p for p, _ in prompts]))
    model.prompt_heads.eval()
    out = model.prompt_heads(emb)
    acc = {}
    for k in ("biome", "weather", "time", "creature", "mixed"):
        if k == "mixed":
            want = [int(lab["biome2"] >= 0) for _, lab in prompts]
        else:
            want = [lab[k] + (1 if k == "creature" else 0) for _, lab in prompts]
        acc[k] = round((out[k].argmax(1) == to_t(want)).float().mean().item(), 4)
    return acc


def train_classifier(cfg: TrainConfig, steps: int) -> None:
    """Extra steps for the evaluation's frame classifier alone, on the exported one.

    It is the judge of prompt adherence, not part of the served model; with 16 biomes under
    every light and atmosphere it needs more steps than the model does."""
    torch.set_num_threads(cfg.threads)
    path = Path(cfg.out) / "classifier.safetensors"
    classifier = load_classifier(path, strict=False).train()
    opt = torch.optim.AdamW(classifier.parameters(), lr=cfg.lr * 0.5, weight_decay=0.0)
    rng = np.random.default_rng(cfg.seed + 99)
    bar = tqdm(range(steps), desc="train classifier")
    for step in bar:
        for group in opt.param_groups:
            group["lr"] = cfg.lr * 0.5 * cosine(step, steps)
        frames, scene, cells = classifier_batch(
            rng, cfg.batch_cls * 2, "cpu", mixed=cfg.cls_mixed, remap=cfg.cls_remap
        )
        loss = classifier_loss(classifier, frames, scene, cells, "cpu")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        bar.set_postfix(cls=f"{loss.item():.3f}")
    classifier.eval()
    with torch.no_grad():
        frames, scene, cells = classifier_batch(np.random.default_rng(10_001), 256, "cpu")
        logits = classifier(frames)
        acc = {
            "biome": (logits["biome"].argmax(1) == frame_biome(cells)).float().mean().item(),
            "weather": (logits["weather"].argmax(1) == to_t(scene.weather)).float().mean().item(),
            "time": (logits["time"].argmax(1) == to_t([spec.time_label(m) for m in scene.minute]))
            .float()
            .mean()
            .item(),
        }
    save_classifier(classifier, path)
    meta = read_meta(cfg.out)
    meta["classifier_steps"] = meta.get("classifier_steps", 0) + steps
    meta["classifier_accuracy"] = {k: round(v, 4) for k, v in acc.items()}
    write_meta(cfg.out, meta)
    print(f"classifier saved to {path}: {acc}")
