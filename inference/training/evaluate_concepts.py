"""Measure the open vocabulary: sprites, the reader on phrasings never seen, unseen concepts.

    python -m inference.training.evaluate_concepts [--images var/icons/images.npz]

Prints four tables:
- Faithful sprites: for each trained concept, whether the drawn sprite's nearest real icon (of
  its set: emoji in colour, game icons by shape) is its own.
- Phrasings never seen: the frozen file `data/concepts_frozen.tsv` (written once, before any
  tuning, never read while choosing anything): the reader's top-1 and top-3 concept beside
  plain MiniLM nearest name, and how often a text naming nothing is read as nothing.
- Concepts never trained (the 10%): the rank of each one's real icon among all icons of its
  set, by distance to the sprite drawn from its name, beside a baseline that draws the nearest
  trained concept by meaning instead. A report, not a target.
- Behaviour: the head's motion and light on unseen concepts' labels.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from inference.training.concepts import DATA, load_images, read_tsv
from inference.world import concepts as vocab
from inference.world import spec
from inference.world import text as text_encoder
from inference.world.concepts import BEHAVIOURS
from inference.world.reading import Reader

FROZEN = DATA / "concepts_frozen.tsv"


def _features(images: np.ndarray, colour: bool) -> np.ndarray:
    """Emoji compare premultiplied colour and alpha; silhouettes compare alpha."""
    a = images[..., 3:]
    if not colour:
        return a.reshape(len(images), -1)
    colours = (images[..., :3] * a).reshape(len(images), -1)
    return np.concatenate([colours, a.reshape(len(a), -1)], 1)


def _ranks(drawn: np.ndarray, real: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """1-based rank of real[truth[i]] among all real images by distance to drawn[i]."""
    d = (drawn**2).sum(1)[:, None] - 2 * drawn @ real.T + (real**2).sum(1)[None]
    own = d[np.arange(len(drawn)), truth]
    return (d < own[:, None]).sum(1) + 1


def sprite_tables(reader: Reader, images: np.ndarray) -> tuple[list, list]:
    concepts, keys = reader.concepts, reader.keys
    with torch.no_grad():
        drawn = reader.model.sprites(keys).numpy()
    train_keys = [c.index for c in concepts if c.split == "train"]
    faithful, unseen = [], []
    for source, colour in (("emoji", True), ("game-icons", False)):
        members = np.array([c.index for c in concepts if c.source == source])
        real = _features(images[members], colour)
        pos = {int(m): i for i, m in enumerate(members)}
        for split, out in (("train", faithful), ("unseen", unseen)):
            idx = np.array([c.index for c in concepts if c.source == source and c.split == split])
            truth = np.array([pos[i] for i in idx])
            ranks = _ranks(_features(drawn[idx], colour), real, truth)
            if split == "train":
                out.append((source, len(idx), float(np.mean(ranks == 1))))
                continue
            # baseline: the sprite of the nearest trained concept by meaning
            near = np.array(train_keys)[(keys[idx] @ keys[train_keys].T).argmax(1).numpy()]
            base = _ranks(_features(drawn[near], colour), real, truth)
            out.append((source, len(idx), len(members), np.median(ranks), np.median(base)))
    return faithful, unseen


def frozen_table(reader: Reader) -> dict:
    rows = read_tsv(FROZEN)
    by_name = vocab.by_name()
    naming = [(p, by_name[c].index) for p, c in rows if c != "none" and c in by_name]
    nothing = [p for p, c in rows if c == "none"]
    names = reader.keys.numpy()
    plain = text_encoder.embed([p for p, _ in naming]) @ names.T
    top1 = top3 = base1 = base3 = 0
    for (p, label), sims in zip(naming, plain, strict=True):
        got = [m.concept.index for m in reader.ranked(p, 3)]
        top1 += got[0] == label
        top3 += label in got
        order = np.argsort(-sims)[:3]
        base1 += order[0] == label
        base3 += label in order
    empty = sum(not reader.things(p, known=spec.DRAWN_NAMES) for p in nothing)
    n = len(naming)
    return {
        "rows": n,
        "missing": sum(1 for _, c in rows if c != "none" and c not in by_name),
        "reader": (top1 / n, top3 / n),
        "minilm": (base1 / n, base3 / n),
        "nothing": (empty, len(nothing)),
    }


def behaviour_table(reader: Reader) -> tuple[int, float, float]:
    unseen = [c for c in reader.concepts if c.split == "unseen" and c.motion is not None]
    got = [reader.behaviour(c) for c in unseen]
    motion = np.mean([g.motion == c.motion for g, c in zip(got, unseen, strict=True)])
    light = np.mean([g.light == c.light for g, c in zip(got, unseen, strict=True)])
    return len(unseen), float(motion), float(light)


# Events naming things outside the 26 concepts of the model before the open vocabulary: each
# must come back applied and show beside the player (`--sheet` draws them).
OPEN_EVENTS = (
    "a lighthouse stands on the shore",
    "a dragon flies over the trees",
    "build a windmill here",
    "a castle rises from the ground",
    "a sailboat drifts on the water",
    "a horse gallops by",
    "put a snowman next to me",
    "a robot walks up to me",
    "a mushroom grows at my feet",
    "an elephant appears",
    "a hot air balloon floats above",
    "a tractor rumbles past",
    "place a treasure chest here",
    "a unicorn trots by",
    "a penguin waddles over",
    "a cactus grows here",
    "light a lantern",
    "a pumpkin appears",
    "a giraffe wanders past",
    "an octopus swims nearby",
)


def event_sheet(out: Path) -> list[tuple[str, str, str, int]]:
    """Apply each of OPEN_EVENTS to a fresh meadow beside its player; -> (text, status, things,
    pixels changed right of the player) and a PNG sheet of before/after frames at ``out``."""
    from PIL import Image, ImageDraw

    from inference.world.engine import UnsupportedEvent, WorldEngine

    engine = WorldEngine.load()
    rows, tiles = [], []
    for i, text in enumerate(OPEN_EVENTS):
        wid = engine.create_world(prompt="a quiet sunny meadow by a lake", seed=40 + i)
        pid = engine.add_player(wid)
        before = engine.step({pid: frozenset()}, {pid: 1})[pid][-1]
        try:
            engine.apply_event(wid, text, near=pid)
            status = "applied"
        except UnsupportedEvent as exc:
            status = f"unsupported: {exc}"
        after = engine.step({pid: frozenset()}, {pid: 1})[pid][-1]
        changed = int((after.astype(int) != before).any(-1)[:, 64:].sum())
        things = ", ".join(o.concept for o in engine.worlds[wid].objects)
        rows.append((text, status, things, changed))
        tiles.append((text, things, after))
        engine.drop_world(wid)
    scale, cols, cap = 2, 5, 30
    side = 128 * scale
    sheet = Image.new("RGB", (cols * side, (len(tiles) + cols - 1) // cols * (side + cap)), "white")
    draw = ImageDraw.Draw(sheet)
    for i, (text, things, frame) in enumerate(tiles):
        x, y = i % cols * side, i // cols * (side + cap)
        img = Image.fromarray(frame).resize((side, side), Image.Resampling.NEAREST)
        sheet.paste(img, (x, y + cap))
        draw.text((x + 3, y + 2), text[:42], fill="black")
        draw.text((x + 3, y + 15), f"-> {things}"[:42], fill="darkgreen")
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out)
    return rows


def sprite_sheet(reader: Reader, images: np.ndarray, out: Path, n: int = 24) -> None:
    """Real icon beside drawn sprite, 8x, for n trained and n never-trained concepts."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(0)
    with torch.no_grad():
        drawn = reader.model.draw(reader.keys).numpy()
    picks = [
        [c for c in reader.concepts if c.split == split][i]
        for split in ("train", "unseen")
        for i in rng.choice(sum(c.split == split for c in reader.concepts), n, replace=False)
    ]
    cell, cols = 16 * 6, 6
    sheet = Image.new("RGB", (cols * 2 * cell, (len(picks) // cols) * (cell + 14)), "white")
    draw = ImageDraw.Draw(sheet)
    for k, c in enumerate(picks):
        x, y = k % cols * 2 * cell, k // cols * (cell + 14)
        for j, rgba in enumerate(((images[c.index] * 255).astype(np.uint8), drawn[c.index])):
            img = Image.fromarray(rgba, "RGBA").resize((cell, cell), Image.Resampling.NEAREST)
            bg = Image.new("RGBA", img.size, (200, 220, 190, 255))
            sheet.paste(Image.alpha_composite(bg, img).convert("RGB"), (x + j * cell, y + 14))
        colour = "black" if c.split == "train" else "firebrick"
        draw.text((x + 2, y + 1), c.name[:30], fill=colour)
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=Path, default=Path("var/icons/images.npz"))
    parser.add_argument("--sheet", type=Path, help="also apply OPEN_EVENTS and draw them here")
    parser.add_argument("--sprites", type=Path, help="also draw icons beside sprites here")
    args = parser.parse_args()
    if args.sheet:
        rows = event_sheet(args.sheet)
        print("| event | status | things | pixels changed |\n| --- | --- | --- | --- |")
        for text, status, things, changed in rows:
            print(f"| {text} | {status} | {things} | {changed} |")
        print(f"\nsheet: {args.sheet}\n")
    reader = Reader.load()
    images = load_images(args.images)
    if args.sprites:
        sprite_sheet(reader, images, args.sprites)
    faithful, unseen = sprite_tables(reader, images)
    print("Faithful sprites (trained concepts: the drawn sprite's nearest icon is its own)\n")
    print("| icons | concepts | own icon nearest |\n| --- | --- | --- |")
    for source, n, share in faithful:
        print(f"| {source} | {n} | {share:.3f} |")
    f = frozen_table(reader)
    print(f"\nPhrasings never seen ({FROZEN.name}: {f['rows']} naming phrases)\n")
    print("| reader | top-1 | top-3 |\n| --- | --- | --- |")
    for name, key in (("trained reader", "reader"), ("plain MiniLM nearest name", "minilm")):
        print(f"| {name} | {f[key][0]:.3f} | {f[key][1]:.3f} |")
    print(f"\nNaming nothing, read as nothing: {f['nothing'][0]}/{f['nothing'][1]}")
    print("\nConcepts never trained: rank of the real icon among all of its set\n")
    print("| icons | unseen | among | median rank, drawn | median rank, nearest trained |")
    print("| --- | --- | --- | --- | --- |")
    for source, n, among, mine, base in unseen:
        print(f"| {source} | {n} | {among} | {mine:.0f} | {base:.0f} |")
    n, motion, light = behaviour_table(reader)
    print(f"\nBehaviour on {n} unseen labelled concepts: motion {motion:.3f}, light {light:.3f}")
    print(f"(motions: {', '.join(BEHAVIOURS)})")


if __name__ == "__main__":
    main()
