"""Train the open-vocabulary networks (`world.sprites.ConceptModel`) on the labelled icons.

    python -m inference.training.concepts            # after `python -m inference.training.icons`

Only concepts of the "train" split are seen: their icons (sprites), their behaviour labels and
their names and descriptions (`data/concept_descriptions.tsv`). The reader learns from texts
generated from them: events and prompts naming none, one or two concepts, each span labelled,
and the world model's own creature and thing events (`spec.DRAWN_NAMES`, read beside the
concepts when serving), whose every span names that one or nothing new. Names of
places and skies (`scenery`: "valley", "sunset", "marsh") are texts and settings that name
nothing: a river a player walks along is the world's place.
A fifth of the description rows, by a hash of the phrase, is kept back as the tuning split
that `training.sweep_reader` fits the reader's threshold on. `data/concepts_frozen.tsv` is
never read here. Prints its progress and a table of the final losses.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import time
import zlib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from inference.training.icons import CONCRETE, SCENE
from inference.training.simulator import phrasing
from inference.world import concepts as vocab
from inference.world import reading, spec
from inference.world import text as text_encoder
from inference.world.concepts import BEHAVIOURS
from inference.world.sprites import WEIGHTS, ConceptModel

DATA = Path(__file__).parent / "data"
DESCRIPTIONS = DATA / "concept_descriptions.tsv"
NOTHING = DATA / "names_nothing_train.tsv"  # the sweep tunes on names_nothing.tsv, never this
SINGLES = (
    "{}", "{} appears", "{} appears nearby", "build {}", "put {} here", "add {}",
    "there is {} here", "{} stands here", "{} wanders by", "{} flies overhead", "{} swims past",
    "I want {}", "make {} appear", "summon {}", "show me {}", "place {} next to me",
    "suddenly {} shows up", "{} comes out of nowhere", "look, {}", "can you add {} please",
)  # fmt: skip
PAIRS = (
    "flies over", "next to", "beside", "near", "and", "sits by", "chases", "in front of",
    "behind", "on top of", "lands on", "walks toward", "with", "circles", "guards",
)  # fmt: skip
SCENES = ("{p} with {s}", "{s} in {p}", "{p} with {s} and {o}", "{s} by {p} at dusk")
READER_TEXTS = 24000
EMBED_CACHE = Path("var/icons/embeddings.npz")
SPANS_PER_TEXT = 6
FLAT = 0.05  # weight of a silhouette's colour steps beside the sprite losses
DRAWN = 1 << 16  # a span label from here on: the model's own spec.DRAWN_NAMES[label - DRAWN]


def read_tsv(path: Path) -> list[tuple[str, str]]:
    with path.open(encoding="utf-8") as f:
        return [(r["phrase"], r["concept"]) for r in csv.DictReader(f, delimiter="\t")]


def is_tuning(phrase: str) -> bool:
    return zlib.crc32(phrase.encode()) % 5 == 0


def load_images(path: Path) -> np.ndarray:
    data = np.load(path)
    names = [c.name for c in vocab.load()]
    if list(data["names"]) != names:
        raise SystemExit(f"{path} was built from another concepts.json: run training.icons")
    return data["images"].astype(np.float32) / 255.0  # (N, 16, 16, 4) straight alpha


def sprite_loss(out: torch.Tensor, target: torch.Tensor, colour: torch.Tensor) -> torch.Tensor:
    """Alpha everywhere; premultiplied colour where the icon has colour (emoji, not
    silhouettes), so the generator learns shapes from both and colours from the emoji. A
    silhouette says nothing of its colour: inside one, neighbours are asked for the same colour
    (`FLAT`), so it comes in a tint of its own rather than in noise."""
    a_loss = F.mse_loss(out[..., 3], target[..., 3])
    pre_o, pre_t = out[..., :3] * out[..., 3:], target[..., :3] * target[..., 3:]
    c_loss = ((pre_o - pre_t) ** 2).mean((1, 2, 3))
    plain = 1 - colour
    flat = (_unevenness(out[..., :3], target[..., 3] > 0.5) * plain).sum() / plain.sum().clamp(
        min=1
    )
    return a_loss + (c_loss * colour).sum() / colour.sum().clamp(min=1) + FLAT * flat


def _unevenness(rgb: torch.Tensor, inside: torch.Tensor) -> torch.Tensor:
    """(B,) mean colour step between neighbouring pixels that are both inside the shape."""
    dy = (rgb[:, 1:] - rgb[:, :-1]).abs().sum(-1) * (inside[:, 1:] & inside[:, :-1])
    dx = (rgb[:, :, 1:] - rgb[:, :, :-1]).abs().sum(-1) * (inside[:, :, 1:] & inside[:, :, :-1])
    return (dy.sum((1, 2)) + dx.sum((1, 2))) / inside.sum((1, 2)).clamp(min=1)


def _said(rng: np.random.Generator, concept, descriptions: dict) -> str:
    """A concept as a player might put it: a name with an article, or a description."""
    said = descriptions.get(concept.index)
    if said and rng.random() < 0.5:
        return str(rng.choice(said))
    return _as_said(rng, str(rng.choice(concept.names)))


def _as_said(rng: np.random.Generator, name: str) -> str:
    """A name bare, with "the", or with "a"/"an"."""
    article = "an" if name[0] in "aeiou" else "a"
    return str(rng.choice([name, f"the {name}", f"{article} {name}"]))


def _labelled(parts: list[tuple[str, int]]) -> tuple[str, list[int]]:
    """Text and one label per word (a concept index, or -1) from (piece, label) parts."""
    words, labels = [], []
    for piece, label in parts:
        got = reading._words(piece)
        words += got
        labels += [label] * len(got)
    return " ".join(words), labels


def _nothing(rng: np.random.Generator, said: list[str]) -> str:
    """A text naming no thing: the sky, the time or the place as the world model's phrasing
    banks say them, or (half the time, when written) what players say that names nothing."""
    if said and rng.random() < 0.5:
        return str(rng.choice(said))
    kind = str(rng.choice(["weather", "time", "place"]))
    if kind == "place":
        return phrasing._biome_phrase(rng, int(rng.integers(len(spec.BIOMES))), "train")[0]
    size = len(spec.WEATHERS) if kind == "weather" else len(spec.TIMES)
    return phrasing.event_for(rng, kind, int(rng.integers(size)), "train")


def scenery(concepts) -> list[str]:
    """Names of places, skies and times, not things: those the icons' labels judge a scene
    (`data/concrete_labels.json`) and the players' words for the world model's places
    (`world/data/own_names.json`), less any name a concept has. A span of them reads as none."""
    named = {n for c in concepts for n in c.names}
    judged = json.loads(CONCRETE.read_text())
    said = [k for k, v in judged.items() if v == SCENE]
    said += [n for c, n in reading.own_names() if reading.OWN_CLASSES[c][0] == "biome"]
    return sorted(set(said) - named)


def _setting(rng: np.random.Generator) -> tuple[str, int]:
    """A world description as the phrasing banks write it, without their scene details (which
    name things: "with a lighthouse"): place, sky, time and maybe one of the model's creatures,
    with its label (`DRAWN + j`, or -1): "red sand dunes under a blazing noon sun" names no
    thing."""
    while True:
        text, labels = phrasing.world_prompt(rng, "train")
        if not any(d in text for d in phrasing.DETAILS):
            creature = labels["creature"]
            return text, -1 if creature < 0 else DRAWN + creature


def _drawn_event(rng: np.random.Generator) -> tuple[str, int]:
    """One of the world model's own creature or thing events, as its phrasing banks say it,
    and the index of what it names in `spec.DRAWN_NAMES`."""
    kind = "creature" if rng.random() < 0.5 else "thing"
    value = int(rng.integers(len(spec.CREATURES if kind == "creature" else spec.THINGS)))
    drawn = value if kind == "creature" else len(spec.CREATURES) + value
    return phrasing.event_for(rng, kind, value, "train"), drawn


def reader_corpus(rng: np.random.Generator, concepts) -> list[tuple[str, list[tuple[str, int]]]]:
    """Texts naming none, one or two trained concepts (by name or description, in events and
    prompts), each with some of its spans labelled: the concept whose words alone it holds,
    else -1 (none: template words, two concepts at once, the sky, the time, the place). A
    span of one of the model's own events is labelled `DRAWN + j` (`spec.DRAWN_NAMES[j]`):
    its drawn one, or nothing new."""
    trained = [c for c in concepts if c.split == "train"]
    by_name = {c.name: c for c in trained}
    descriptions: dict[int, list[str]] = {}
    for p, c in read_tsv(DESCRIPTIONS) if DESCRIPTIONS.exists() else []:
        if c in by_name and not is_tuning(p):
            descriptions.setdefault(by_name[c].index, []).append(p)
    nothing = [p for p, _ in read_tsv(NOTHING)] if NOTHING.exists() else []
    plain = scenery(concepts)
    corpus = []
    for _ in range(READER_TEXTS):
        a, b = (trained[int(i)] for i in rng.integers(len(trained), size=2))
        sa, sb = _said(rng, a, descriptions), _said(rng, b, descriptions)
        r = rng.random()
        if r < 0.12:  # the model's own: alone, or beside a concept ("a fox and a dragon")
            event, drawn = _drawn_event(rng)
            parts = [(event, DRAWN + drawn)]
            if rng.random() < 0.3:
                parts += [(str(rng.choice([" and ", " next to "])), -1), (sa, a.index)]
        elif r < 0.25:
            x = rng.random()
            if x < 0.35:
                parts = [_setting(rng)]
            else:
                parts = [
                    (
                        _as_said(rng, str(rng.choice(plain)))
                        if x < 0.5
                        else _nothing(rng, nothing),
                        -1,
                    )
                ]
        elif r < 0.55:
            head, _, tail = str(rng.choice(SINGLES)).partition("{}")
            parts = [(head, -1), (sa, a.index), (tail, -1)]
            if rng.random() < 0.15:
                parts += [(" and ", -1), (_nothing(rng, nothing), -1)]
        elif r < 0.8 and a is not b:
            parts = [(sa, a.index), (str(rng.choice(PAIRS)), -1), (sb, b.index)]
        else:
            place, x = (
                phrasing._biome_phrase(rng, int(rng.integers(len(spec.BIOMES))), "train")[0],
                rng.random(),
            )
            if x < 0.2:
                place = _nothing(rng, [])
            elif x < 0.4:
                place = _as_said(rng, str(rng.choice(plain)))
            scene = str(rng.choice(SCENES))
            pieces = re.split(r"(\{[pso]\})", scene)
            fill = {"{p}": (place, -1), "{s}": (sa, a.index), "{o}": (sb, b.index)}
            parts = [fill.get(x, (x, -1)) for x in pieces if x]
        text, labels = _labelled(parts)
        spans = reading._spans(text)
        keep = [len(spans) - 1] + list(rng.choice(len(spans), min(SPANS_PER_TEXT, len(spans))))
        rows = []
        for i in dict.fromkeys(int(k) for k in keep):
            span, (lo, hi) = spans[i]
            named = {x for x in labels[lo:hi] if x >= 0}
            rows.append((span, named.pop() if len(named) == 1 else -1))
        corpus.append((text, rows))
    return corpus


def embed_corpus(corpus) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(M, 384) span and (M, 384) context embeddings and (M,) labels of every labelled span."""
    texts = [t for t, _ in corpus]
    spans = [s for _, rows in corpus for s, _ in rows]
    print(f"embedding {len(set(texts) | set(spans))} texts and spans ...", flush=True)
    vecs = dict(zip(unique := list(dict.fromkeys(texts + spans)), _embed_all(unique), strict=True))
    span_vecs = torch.from_numpy(np.stack([vecs[s] for s in spans]))
    text_vecs = torch.from_numpy(np.stack([vecs[t] for t, rows in corpus for _ in rows]))
    labels = torch.tensor([x for _, rows in corpus for _, x in rows])
    return span_vecs, text_vecs, labels


def _embed_all(texts: list[str], batch: int = 4096) -> np.ndarray:
    """MiniLM embeddings, the ones made before read from var/icons/embeddings.npz (a corpus
    of ~75,000 texts and spans takes ~6 minutes on 2 cores; most recur between runs)."""
    known: dict[str, np.ndarray] = {}
    if EMBED_CACHE.exists():
        with np.load(EMBED_CACHE) as cached:
            known = dict(zip(cached["texts"].tolist(), cached["vecs"], strict=True))
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    for i in range(0, len(missing), batch):
        part = missing[i : i + batch]
        known.update(zip(part, text_encoder.embed(part), strict=True))
        print(f"  {min(i + batch, len(missing))}/{len(missing)} new", flush=True)
    if missing:
        EMBED_CACHE.parent.mkdir(parents=True, exist_ok=True)
        np.savez(EMBED_CACHE, texts=np.array(list(known)), vecs=np.stack(list(known.values())))
    return np.stack([known[t] for t in texts])


def _twin_table(concepts, key_of: torch.Tensor) -> torch.Tensor:
    """(D, T) for each of the model's own names, the trained concepts of the same name (the
    emoji fox is the model's fox: a span may read as either), padded with -1."""
    rows = []
    for name in spec.DRAWN_NAMES:
        said = {name, *phrasing.CREATURE_NOUNS.get(name, [])}
        rows.append(
            [int(key_of[c.index]) for c in concepts if c.split == "train" and said & set(c.names)]
        )
    width = max(1, *(len(r) for r in rows))
    return torch.tensor([r + [-1] * (width - len(r)) for r in rows])


def _read_loss(
    logits: torch.Tensor, target: torch.Tensor, own: torch.Tensor, twins: torch.Tensor, none: int
) -> torch.Tensor:
    """Cross-entropy on a concept or none; a span of the model's own event may be its drawn
    one, a twin of it, or none (all the same to the engine: nothing new is placed), so its
    loss is that set's summed chance."""
    plain = F.cross_entropy(logits, target, label_smoothing=0.05, reduction="none")
    allowed = torch.zeros_like(logits, dtype=torch.bool)
    allowed[torch.arange(len(target)), target] = True
    allowed[:, none] |= own
    twin = twins[(target - (none - len(twins))).clamp(0, len(twins) - 1)]  # (B, T)
    rows = torch.arange(len(target))[:, None].expand_as(twin)
    ok = (twin >= 0) & own[:, None]
    allowed[rows[ok], twin[ok]] = True
    owned = -(torch.logsumexp(logits.masked_fill(~allowed, -1e9), -1) - torch.logsumexp(logits, -1))
    return torch.where(own, owned, plain).mean()


def train(images: Path, steps: int, seed: int, log_every: int = 500) -> ConceptModel:
    torch.manual_seed(seed)
    concepts = vocab.load()
    train_idx = [c.index for c in concepts if c.split == "train"]
    names = text_encoder.embed([c.name for c in concepts])
    img = torch.from_numpy(load_images(images))
    colour = torch.tensor([c.source == "emoji" for c in concepts], dtype=torch.float32)
    model = ConceptModel()

    # the generator and the behaviour head read a concept's names (with noise)
    name_rows = [(c.index, n) for c in concepts if c.split == "train" for n in c.names]
    name_vecs = torch.from_numpy(text_encoder.embed([n for _, n in name_rows]))
    name_of = torch.tensor([i for i, _ in name_rows])
    labelled = torch.tensor([c.motion is not None for c in concepts])
    motion = torch.tensor([BEHAVIOURS.index(c.motion) if c.motion else 0 for c in concepts])
    light = torch.tensor([float(c.light) for c in concepts])

    # the reader: spans of generated texts in their context -> a concept or none
    corpus = reader_corpus(np.random.default_rng(seed), concepts)
    span_vecs, text_vecs, span_of = embed_corpus(corpus)
    print(f"{len(train_idx)} concepts, {len(name_rows)} names, {len(corpus)} reader texts")
    # only trained concepts are candidates, and the model's own names after them
    drawn = torch.from_numpy(text_encoder.embed(list(spec.DRAWN_NAMES)))
    name_keys = torch.cat([torch.from_numpy(names)[train_idx], drawn])
    none = len(name_keys)
    key_of = torch.full((len(concepts) + 1,), none, dtype=torch.long)  # -1: none
    key_of[train_idx] = torch.arange(len(train_idx))
    own = span_of >= DRAWN
    plain = key_of[torch.where(own, -1, span_of)]
    span_target = torch.where(own, len(train_idx) + span_of - DRAWN, plain)
    twins = _twin_table(concepts, key_of)

    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 3e-3, total_steps=steps, pct_start=0.05)
    start, model = time.monotonic(), model.train()
    for step in range(1, steps + 1):
        pick = torch.randint(len(name_rows), (256,))
        emb = F.normalize(name_vecs[pick] + 0.03 * torch.randn(256, 384), dim=-1)
        idx = name_of[pick]
        l_sprite = sprite_loss(model.sprites(emb), img[idx], colour[idx])
        m_logits, l_logit = model.behaviour(emb)
        known = labelled[idx]
        l_motion = F.cross_entropy(m_logits[known], motion[idx][known]) if known.any() else 0.0
        l_light = F.binary_cross_entropy_with_logits(l_logit, light[idx])
        pick = torch.randint(len(span_vecs), (512,))
        keys = model.reader.keys(name_keys)
        logits = model.reader.logits(span_vecs[pick], text_vecs[pick], keys)
        l_read = _read_loss(logits, span_target[pick], own[pick], twins, none)
        loss = 10 * l_sprite + l_motion + l_light + l_read
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % log_every == 0 or step == steps:
            print(
                f"step {step}/{steps}  sprite {float(l_sprite):.4f}  motion {float(l_motion):.3f}"
                f"  light {float(l_light):.3f}  reader {float(l_read):.3f}"
                f"  ({time.monotonic() - start:.0f} s)",
                flush=True,
            )
    return model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=Path, default=Path("var/icons/images.npz"))
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    args = parser.parse_args()
    torch.set_num_threads(2)
    model = train(args.images, args.steps, args.seed)
    try:  # keep the fitted threshold until the sweep fits it again
        model.name_min.copy_(ConceptModel.from_file(args.out).name_min)
    except (OSError, RuntimeError, KeyError):
        pass  # none yet, or weights of another layout: the default until the sweep
    model.save(args.out, {"steps": str(args.steps), "seed": str(args.seed)})
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
