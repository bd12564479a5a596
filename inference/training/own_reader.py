"""Train the reader of the world model's own vocabulary (`world.sprites.OwnReaderModel`).

    python -m inference.training.own_reader [--steps 4000] [--resume] [--split fit]

Labels come from the phrasing banks' generator, never from a rule: `phrasing.labelled_world_prompt`
and `labelled_event_text` say which words of a text name its place, sky, time, creature or
thing (split "train"; "fit" holds the banks' tuning entries and their names back, to choose
settings on `evaluate_reading --split tune`). Beside them, texts that name none of the model's
own: the open vocabulary's trained concepts by name or description (not those that share a name
with one of the model's own: the emoji fox is its fox), alone, in the banks' scene details or
after one of the model's events, and `data/names_nothing_train.tsv` (half from those sharing a
word with an own name). Each text's spans (`reading._spans`, the whole text among them) are
labelled with the one class whose words they hold, else none, and read with their window and
the text.
The keys are the names of `world/data/own_names.json`; a class's chance is the sum of its
names'. Never read here: the held-out written sets, `concepts_frozen.tsv`, the banks' eval
split. Prints its progress and, at the end, per-kind accuracy on texts of another seed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from inference.training.concepts import (
    DESCRIPTIONS,
    NOTHING,
    PAIRS,
    SINGLES,
    _as_said,
    _embed_all,
    is_tuning,
    read_tsv,
)
from inference.training.simulator import phrasing
from inference.world import concepts as vocab
from inference.world import reading
from inference.world import text as text_encoder
from inference.world.reading import NONE, OWN_CLASSES, own_names
from inference.world.sprites import OWN_WEIGHTS, OwnReaderModel

TEXTS = 24000
SPANS_PER_TEXT = 6
CHECKPOINT = Path("var/own_reader.ckpt")
CLASS_OF = {kv: c for c, kv in enumerate(OWN_CLASSES)}
# where one thing is put beside another: what follows is its setting, not a second ask ("a lion
# roars behind the trees" places no trees); "and", "with" and "chases" join two asks
SETTING_PAIRS = tuple(p for p in PAIRS if p not in ("and", "with", "chases", "circles", "guards"))


def _others() -> list[str]:
    """Trained concepts of the open vocabulary as players say them, none of them the model's
    own (a concept sharing a name with an own name is left out)."""
    own = {n for _, n in own_names()}
    trained = [c for c in vocab.load() if c.split == "train" and not own & set(c.names)]
    keep = {c.name for c in trained}
    said = [p for p, c in read_tsv(DESCRIPTIONS) if c in keep and not is_tuning(p)]
    for c in trained:
        said += [f"{'an' if n[0] in 'aeiou' else 'a'} {n}" for n in c.names]
    return said


def names_for(split: str) -> tuple[tuple[int, str], ...]:
    """The own names a reader of this split knows: on "fit", none of the banks' tuning
    entries (`phrasing.tuning_part`), so the tune split meets names never seen."""
    if split != "fit":
        return own_names()
    held = phrasing.tuning_entries()
    return tuple(row for row in own_names() if row[1] not in held)


def corpus(
    rng: np.random.Generator, n: int, split: str = "train"
) -> list[tuple[str, list[tuple[str, int]]]]:
    """n texts of a split ("train", or "fit": the train split less the tuning entries), each
    with some spans labelled: (text, [(span, class or NONE), ...])."""
    others = _others()
    nothing = [p for p, _ in read_tsv(NOTHING)]
    # the hard ones hold a word of an own name in another sense ("bear with me", "duck!"):
    # half the draws, or they would be a few among hundreds
    own_words = {w for _, n in names_for(split) for w in text_encoder.words(n)}
    own_words -= reading.FUNCTION_WORDS
    hard = [p for p in nothing if own_words & set(text_encoder.words(p))]
    # the model's creatures and things by any of their names, as players put them
    things = [
        (c, n)
        for c, n in names_for(split)
        if OWN_CLASSES[c][0] in ("creature", "thing")
        and len(n.split()) <= 2
        and n.split()[0] not in ("a", "an", "the")
    ]
    out = []
    for _ in range(n):
        r, said = rng.random(), []
        other = str(rng.choice(others))
        c, name = things[int(rng.integers(len(things)))]
        own = _as_said(rng, name)
        if r < 0.4:
            text, _, said = phrasing.labelled_world_prompt(rng, split)
            if rng.random() < 0.25:
                text = f"{text} with {other}" if rng.random() < 0.5 else f"{other} in {text}"
        elif r < 0.75:
            text, _, said = phrasing.labelled_event_text(rng, split)
            if rng.random() < 0.2:
                text = f"{text} and {other}" if rng.random() < 0.5 else f"{other} and {text}"
        elif r < 0.83:  # one of its own alone, or beside a concept
            head, _, tail = str(rng.choice(SINGLES)).partition("{}")
            text, said = f"{head}{own}{tail}", [((own,), *OWN_CLASSES[c])]
            if rng.random() < 0.3:
                text = f"{text} next to {other}"
        elif r < 0.9:  # one of its own as the setting of a concept: no ask
            text = f"{other} {rng.choice(SETTING_PAIRS)} {own}"
        elif r < 0.93:
            head, _, tail = str(rng.choice(SINGLES)).partition("{}")
            text = f"{head}{other}{tail}"
        else:
            text = str(rng.choice(hard if hard and rng.random() < 0.5 else nothing))
        labels = [None if x is None else CLASS_OF[x] for x in phrasing.word_labels(text, said)]
        spans = reading._spans(text)
        keep = [len(spans) - 1, *rng.choice(len(spans), min(SPANS_PER_TEXT, len(spans)))]
        rows = []
        for i in dict.fromkeys(int(k) for k in keep):
            span, (lo, hi) = spans[i]
            around = reading.window(reading._words(text), (lo, hi))
            named = {x for x in labels[lo:hi] if x is not None}
            rows.append((span, named.pop() if len(named) == 1 else NONE, around))
        out.append((text, rows))
    return out


def embed(rows) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(M, 384) spans, (M, 384) their texts, (M,) classes, (M, 384) their windows."""
    texts = [t for t, _ in rows]
    spans = [s for _, labelled in rows for s, _, _ in labelled]
    windows = [w for _, labelled in rows for _, _, w in labelled]
    unique = list(dict.fromkeys(texts + spans + windows))
    print(f"embedding {len(unique)} texts and spans ...", flush=True)
    vecs = dict(zip(unique, _embed_all(unique), strict=True))
    span_vecs = torch.from_numpy(np.stack([vecs[s] for s in spans]))
    text_vecs = torch.from_numpy(np.stack([vecs[t] for t, ls in rows for _ in ls]))
    window_vecs = torch.from_numpy(np.stack([vecs[w] for w in windows]))
    return span_vecs, text_vecs, torch.tensor([c for _, ls in rows for _, c, _ in ls]), window_vecs


def class_log_probs(model: OwnReaderModel, span, text, names, of, window) -> torch.Tensor:
    """(B, C + 1) log-probability of each class (the sum of its names' chances) and of none."""
    keys = model.reader.keys(names)
    if model.cfg.window:
        logits = model.reader.logits(span, text, keys, window)  # (B, N + 1)
    else:
        logits = model.reader.logits(span, text, keys)
    top = logits.max(-1, keepdim=True).values.detach()
    e = torch.exp(logits - top)
    per = torch.cat([e[:, :-1] @ of, e[:, -1:]], -1)  # (B, C + 1), unnormalised
    return torch.log(per.clamp_min(1e-30)) - torch.log(per.sum(-1, keepdim=True))


def accuracy(model: OwnReaderModel, data, names, of) -> dict[str, float]:
    """Per kind (and none), how often a labelled span's likeliest class is its label."""
    span, text, target, window = data
    with torch.no_grad():
        got = class_log_probs(model, span, text, names, of, window).argmax(-1)
    kinds = np.array([OWN_CLASSES[int(t)][0] if t < NONE else "none" for t in target])
    right = (got == target).numpy()
    return {k: round(float(right[kinds == k].mean()), 3) for k in dict.fromkeys(kinds.tolist())}


def train(
    steps: int,
    seed: int,
    resume: bool,
    texts: int = TEXTS,
    split: str = "train",
) -> OwnReaderModel:
    torch.manual_seed(seed)
    rows = names_for(split)
    names = torch.from_numpy(text_encoder.embed([n for _, n in rows]))
    of = torch.zeros(len(rows), NONE)
    of[torch.arange(len(rows)), torch.tensor([c for c, _ in rows])] = 1.0
    span, text, target, window = embed(corpus(np.random.default_rng(seed), texts, split))
    check = embed(corpus(np.random.default_rng(seed + 1000), texts // 10, split))
    print(f"{len(rows)} names, {NONE} classes, {len(target)} labelled spans", flush=True)
    model = OwnReaderModel().train()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 2e-3, total_steps=steps, pct_start=0.05)
    first = 1
    if resume and CHECKPOINT.exists():
        state = torch.load(CHECKPOINT)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        first = state["step"] + 1
        print(f"resumed at step {first}", flush=True)
    began = time.monotonic()
    for step in range(first, steps + 1):
        pick = torch.randint(len(target), (512,))
        logp = class_log_probs(model, span[pick], text[pick], names, of, window[pick])
        loss = F.nll_loss(logp, target[pick])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 250 == 0 or step == steps:
            took = time.monotonic() - began
            print(f"step {step}/{steps}  loss {loss.item():.3f}  ({took:.0f} s)", flush=True)
            CHECKPOINT.parent.mkdir(parents=True, exist_ok=True)
            state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step}
            torch.save({**state, "sched": sched.state_dict()}, CHECKPOINT)
    model.eval()
    print("span accuracy on texts of another seed:", accuracy(model, check, names, of))
    return model


def set_own_min(path: Path, value: float) -> None:
    """The weights at `path` with their `own_min` set, the rest as it was."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    model = OwnReaderModel.from_file(path)
    model.own_min.fill_(value)
    model.save(path, {k: v for k, v in meta.items() if k != "config"})
    print(f"own_min {value} written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--texts", type=int, default=TEXTS, help="generated training texts")
    parser.add_argument("--resume", action="store_true", help="go on from var/own_reader.ckpt")
    parser.add_argument("--out", type=Path, default=OWN_WEIGHTS)
    parser.add_argument(
        "--split",
        choices=("train", "fit"),
        default="train",
        help="fit: hold the banks' tuning entries back, to choose settings on the tune split "
        "(evaluate_reading --split tune)",
    )
    parser.add_argument("--threads", type=int, default=1, help="2 at most on a shared machine")
    parser.add_argument(
        "--set-own-min",
        type=float,
        help="only write Reader.own_min (as `evaluate_reading --sweep-own-min` fitted it) into "
        "the weights at --out",
    )
    args = parser.parse_args()
    if args.set_own_min is not None:
        set_own_min(args.out, args.set_own_min)
        return
    torch.set_num_threads(args.threads)
    model = train(args.steps, args.seed, args.resume, args.texts, args.split)
    meta = {"steps": str(args.steps), "seed": str(args.seed), "split": args.split}
    model.save(args.out, meta)
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
