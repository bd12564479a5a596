"""Training data made on the fly by the simulator: embedded phrasings, scenes, generator windows,
the judge's and the codec encoder's frames."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from inference.training import simulator as sim
from inference.training.config import TrainConfig
from inference.world import spec
from inference.world.model import (
    EVENT_HEADS,
    LIGHT_STEPS,
    PROMPT_HEADS,
    ModelConfig,
    WorldModel,
)


def to_t(x, dtype=torch.long, device="cpu") -> torch.Tensor:
    return torch.as_tensor(np.asarray(x), dtype=dtype, device=device)


def text_dataset(cfg: TrainConfig, split: str = "train") -> dict[str, torch.Tensor]:
    """Embedded phrasings of a split with labels, cached on disk (MiniLM costs a minute on 2
    cores)."""
    # the phrasing code's and banks' hash in the name: a widened bank is embedded again
    sources = (Path(sim.phrasing.__file__), sim.phrasing.BANKS_FILE)
    banks = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:8]
    cache = Path(cfg.checkpoint).with_name(
        f"text_v{spec.MODEL_VERSION}_{cfg.seed}_{cfg.n_prompts}_{cfg.n_events}_{banks}.pt"
    )
    if split != "train":
        cache = cache.with_name(f"{split}_{cache.name}")
    if cache.exists():
        return torch.load(cache)
    from inference.world import text as text_encoder

    rng = np.random.default_rng(cfg.seed + 1)
    prompts = [sim.world_prompt(rng, split) for _ in range(cfg.n_prompts)]
    events = [sim.event_text(rng, split) for _ in range(cfg.n_events)]
    print(f"embedding {len(prompts) + len(events)} phrasings with all-MiniLM-L6-v2 ...")
    data = {
        "prompt_emb": torch.from_numpy(text_encoder.embed([p for p, _ in prompts])),
        "event_emb": torch.from_numpy(text_encoder.embed([e for e, _ in events])),
    }
    for k in PROMPT_HEADS:
        if k == "mixed":
            continue
        shift = 1 if k == "creature" else 0  # creature: 0 means none
        data[f"prompt_{k}"] = to_t([lab[k] + shift for _, lab in prompts])
    data["prompt_biome2"] = to_t([lab["biome2"] for _, lab in prompts])  # -1: one biome
    data["prompt_mixed"] = (data["prompt_biome2"] >= 0).long()
    for k in EVENT_HEADS:
        data[f"event_{k}"] = to_t([lab[k] + 1 for _, lab in events])  # 0 means no such event
    cache.parent.mkdir(parents=True, exist_ok=True)
    torch.save(data, cache)
    return data


def scene_tensors(scene: sim.Scene, device="cpu") -> tuple:
    return tuple(
        to_t(x, device=device)
        for x in (
            scene.tokens,
            scene.offset,
            scene.weather,
            scene.minute,
            scene.phase,
            scene.sprites,
        )
    )


def render_loss(renderer, scene: sim.Scene, device="cpu") -> torch.Tensor:
    """The renderer's loss on a scene: MSE (x100) against the simulator's frame of it."""
    target = torch.from_numpy(sim.render(scene)).to(device).float().div(255)
    return F.mse_loss(renderer(*scene_tensors(scene, device)), target) * 100


def biome_target(biome, biome2, mix) -> torch.Tensor:
    """(B, n_biomes) share of each biome: one-hot, or two with the second's share ``mix``."""
    biome, biome2 = torch.as_tensor(biome).long(), torch.as_tensor(biome2).long()
    mix = torch.as_tensor(mix, dtype=torch.float32) * (biome2 >= 0)
    out = F.one_hot(biome, len(spec.BIOMES)).float() * (1 - mix)[:, None]
    return out + F.one_hot(biome2.clamp(min=0), len(spec.BIOMES)).float() * mix[:, None]


class PromptIndex:
    """Training prompts by the biomes they name: a generator window of biome b (or of b and b2
    mixed) is conditioned on the embedding of a prompt naming exactly those."""

    def __init__(self, text: dict[str, torch.Tensor]):
        self.emb = text["prompt_emb"]
        self.by: dict[tuple[int, ...], list[int]] = {}
        for i, (b, b2) in enumerate(
            zip(text["prompt_biome"].tolist(), text["prompt_biome2"].tolist(), strict=True)
        ):
            self.by.setdefault(tuple(sorted({b, b2} - {-1})), []).append(i)

    def draw(self, rng, biome, biome2, no_text: float) -> torch.Tensor:
        out = torch.zeros(len(biome), self.emb.shape[1])
        for i, (b, b2) in enumerate(zip(biome.tolist(), biome2.tolist(), strict=True)):
            if rng.random() < no_text:
                continue
            pool = self.by.get(tuple(sorted({b, b2} - {-1}))) or self.by.get((b,))
            if pool:
                out[i] = self.emb[pool[rng.integers(len(pool))]]
        return out


def generator_batch(
    rng, cfg: TrainConfig, mcfg: ModelConfig, model: WorldModel, prompts, device
) -> tuple:
    """Context with dropped neighbours, self-forced context, masked centre -> (inputs, targets)."""
    m, c = mcfg.gen_margin, spec.CHUNK
    tokens, spawn, biome, biome2, mix = sim.random_windows(rng, cfg.batch_gen, margin=m)
    tokens, spawn = to_t(tokens, device=device), to_t(spawn, device=device)
    probs = biome_target(biome, biome2, mix).to(device)
    text = prompts.draw(rng, biome, biome2, cfg.no_text).to(device)
    b, s = tokens.shape[0], tokens.shape[1]
    idx = torch.arange(s, device=device)
    centre = ((idx >= m) & (idx < m + c))[:, None] & ((idx >= m) & (idx < m + c))[None, :]
    ctx = tokens.clone()
    # self-forcing: re-sample ~40% of the context with the generator itself
    sf = torch.rand(b, device=device) < cfg.self_forcing
    if sf.any():
        hole = (torch.rand(b, s, s, device=device) < 0.4) & ~centre & sf[:, None, None]
        sel = sf.nonzero()[:, 0]
        probe = torch.where(hole | centre, spec.MASK_TOKEN, ctx)[sel]
        with torch.no_grad():
            logits = model.generator(probe, spawn[sel], probs[sel], text[sel])
            u = torch.rand_like(logits).clamp(1e-9, 1 - 1e-9)
            own = (logits - torch.log(-torch.log(u))).argmax(1)
        ctx[sel] = torch.where(hole[sel], own, ctx[sel])
    # neighbours not generated yet: drop whole sides of the margin
    left = idx[None, None, :] < m
    right = idx[None, None, :] >= m + c
    top = idx[None, :, None] < m
    bottom = idx[None, :, None] >= m + c
    drop = torch.rand(b, 4, device=device) < cfg.drop_side
    unknown = (
        (drop[:, 0, None, None] & left)
        | (drop[:, 1, None, None] & right)
        | (drop[:, 2, None, None] & top)
        | (drop[:, 3, None, None] & bottom)
    )
    ctx = torch.where(unknown, spec.UNKNOWN_TOKEN, ctx)
    # MaskGIT: mask a cosine-scheduled share of the centre
    ratio = torch.cos(math.pi / 2 * torch.rand(b, device=device))[:, None, None]
    masked = (torch.rand(b, s, s, device=device) < ratio) & centre
    masked[:, m, m] |= ~masked.flatten(1).any(1)  # at least one cell to predict
    ctx = torch.where(masked, spec.MASK_TOKEN, ctx)
    return ctx, spawn, probs, text, tokens, masked


def classifier_batch(rng, batch: int, device, mixed: float = 0.0, remap: float = 0.0) -> tuple:
    """-> (frames, scene, cell_biomes of the scene as a tensor); a share ``mixed`` of the
    frames are of mixed worlds, a share ``remap`` has its tile kinds remapped. The frames are
    the teacher's (`render_rich`, 192 pixels): the judge reads what the decoder serves."""
    scene, _ = sim.random_scenes(rng, batch, sprite_prob=0.5, things=0.05, mixed=mixed)
    remap_kinds(rng, scene, remap)
    frames = sim.render_rich(scene)
    frames = torch.from_numpy(frames).to(device).float().div(255).permute(0, 3, 1, 2)
    return frames, scene, torch.from_numpy(cell_biomes(scene)).to(device)


def remap_kinds(rng, scene: sim.Scene, share: float) -> None:
    """In place: in a share of the scenes, each tile kind becomes a random kind of the same
    biome (one map per scene: the layout stays, the mix of kinds changes; placed things stay).
    The generator's worlds hold other mixes of kinds than the simulator's, and a judge fitted
    to the simulator's mix read a rocky canyon at noon as dusk."""
    if share <= 0:  # draws nothing: the batches of a run without remapping stay as they were
        return
    k = len(spec.TILE_KINDS)
    for i in np.nonzero(rng.random(len(scene.tokens)) < share)[0]:
        tok = scene.tokens[i]
        tile = tok < spec.BIOME_TOKENS
        kinds = rng.integers(0, k, k)  # old kind -> new kind
        tok[tile] = tok[tile] // k * k + kinds[tok[tile] % k]


def frame_biome(cells: torch.Tensor) -> torch.Tensor:
    """cell_biomes (B, n_biomes + 1, h, w) -> (B,) the biome most of the frame shows."""
    return cells[:, :-1].sum((2, 3)).argmax(1)


def cell_biomes(scene: sim.Scene, cell: int = 16) -> np.ndarray:
    """(B, n_biomes + 1, F / cell, F / cell) float32: the share of each 16x16 cell's pixels
    showing each biome's tiles (the last: placed things), as the frame is cut from the window."""
    b, f, n = len(scene.tokens), scene.frame, len(spec.BIOMES)
    tokens = scene.tokens.astype(np.int64)
    biome = np.where(tokens < spec.BIOME_TOKENS, tokens // len(spec.TILE_KINDS), n)
    rows = (spec.TILE + scene.offset[:, 1, None] + np.arange(f)) // spec.TILE  # (B, F)
    cols = (spec.TILE + scene.offset[:, 0, None] + np.arange(f)) // spec.TILE
    pixels = biome[np.arange(b)[:, None, None], rows[:, :, None], cols[:, None, :]]  # (B, F, F)
    onehot = np.eye(n + 1, dtype=np.float32)[pixels]  # (B, F, F, n + 1)
    k = f // cell
    return onehot.reshape(b, k, cell, k, cell, n + 1).mean((2, 4)).transpose(0, 3, 1, 2)


def classifier_loss(classifier, frames, scene, target, device) -> torch.Tensor:
    """Biome per cell against `target` (cell_biomes: soft, a cell across a border is a share
    of each; things do not count), atmosphere and time of day per frame."""
    out, cells = classifier.with_cells(frames)
    weight = 1 - target[:, -1]  # (B, h, w): the cell's share of biome tiles
    per_cell = -(target[:, :-1] * F.log_softmax(cells["biome"], 1)).sum(1)
    time_label = to_t([spec.time_label(m) for m in scene.minute], device=device)
    return (
        (per_cell * weight).sum() / weight.sum().clamp(min=1)
        + F.cross_entropy(out["weather"], to_t(scene.weather, device=device))
        + F.cross_entropy(out["time"], time_label)
    )


def encoder_batch(rng, batch: int, device) -> tuple:
    """Grid-aligned frames (offset 0), so every 8x8 patch is one tile.

    Returns (patches, tokens, frames, weather, half hour)."""
    scene, _ = sim.random_scenes(rng, batch, sprite_prob=0.2)
    scene.offset[:] = 0
    frames = torch.from_numpy(sim.render(scene)).to(device).float().div(255)  # (B, F, F, 3)
    n = spec.FRAME // spec.TILE
    patches = frames.view(batch, n, spec.TILE, n, spec.TILE, 3).permute(0, 1, 3, 5, 2, 4)
    patches = patches.reshape(-1, 3, spec.TILE, spec.TILE)
    tokens = to_t(scene.tokens[:, 1 : 1 + n, 1 : 1 + n], device=device).reshape(-1)
    half_hour = to_t(scene.minute // (spec.DAY_MINUTES // LIGHT_STEPS), device=device)
    return (
        patches,
        tokens,
        frames.permute(0, 3, 1, 2),
        to_t(scene.weather, device=device),
        half_hour,
    )
