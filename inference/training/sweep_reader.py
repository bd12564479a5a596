"""Fit the reader's two thresholds on the tuning split; print both sweeps.

    python -m inference.training.sweep_reader [--write]

Tuning rows: the fifth of `data/concept_descriptions.tsv` the training never saw (by a hash
of the phrase), each naming one concept, and texts that name no concrete thing: the plain
sky and time events the world model has (`spec.EVENT_PHRASES`) and `data/names_nothing.tsv`.
The first threshold (`name_min`) is scored by balanced accuracy: a naming row is right when
the reader's surest thing is its concept, a nothing row when the reader finds no thing. Then,
at that one, the second (`more_min`, how surely a text's second or third thing must name
something other than the things read before it), by how often a tuning description alone
gives exactly its concept, and one beside another's name ("... next to a lighthouse") exactly
both. Where scores tie within `TIE`, the
higher threshold is kept. Things are read as the engine reads them, beside the model's own
creatures and things (`spec.DRAWN_NAMES`).
`--write` stores both in the weights. The frozen test (`data/concepts_frozen.tsv`) is never
read here.

The own head (the model's places, skies, times, creatures and things) has no threshold: a span
names its likeliest class unless that is "none". Its table shows that decision beside a floor
on the class's chance, on tuning texts (the phrasing banks' train split drawn with a seed the
training never used, `data/prompts_written.tsv` and set C of the written events), so a floor
would show if "none" were not calibrated; the held-out written sets are never read here.
"""

from __future__ import annotations

import argparse

import numpy as np

from inference.training.concepts import DATA, DESCRIPTIONS, is_tuning, read_tsv
from inference.training.simulator import phrasing
from inference.world import concepts as vocab
from inference.world import spec
from inference.world.reading import NONE, OWN_CLASSES, OWN_KINDS, Reader
from inference.world.sprites import WEIGHTS

OWN_SEED = 4646  # the own head trained on seeds 0 and 1000
OWN_FLOORS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7)  # 0: the argmax alone, as served

NOTHING = DATA / "names_nothing.tsv"
GRID = np.round(np.arange(0.05, 0.96, 0.05), 2)
TIE = 0.005  # balanced scores this close are a row or two of the split: the surer one is kept


def _best(rows: list[tuple[float, float, float, float]]) -> tuple[float, float, float, float]:
    top = max(r[3] for r in rows)
    return max((r for r in rows if r[3] >= top - TIE), key=lambda r: r[0])


def tuning_rows() -> tuple[list[tuple[str, int]], list[str]]:
    by_name = vocab.by_name()
    naming = [
        (p, by_name[c].index)
        for p, c in read_tsv(DESCRIPTIONS)
        if c in by_name and by_name[c].split == "train" and is_tuning(p)
    ]
    nothing = [p for kind in ("weather", "time") for p in spec.EVENT_PHRASES[kind].values()]
    nothing += [p for p, _ in read_tsv(NOTHING)]
    return naming, nothing


def _surest(reader: Reader, text: str) -> tuple[int, float]:
    """The concept of the span surest to name something, and how sure (`Reader.things`'s
    first pick at any threshold)."""
    _, probs = reader.read(text)
    i = int((1 - probs[:, -1]).argmax())
    return int(probs[i, :-1].argmax()), float(1 - probs[i, -1])


def sweep(reader: Reader) -> list[tuple[float, float, float, float]]:
    """-> (threshold, named right, nothing right, balanced) for each threshold of the grid."""
    naming, nothing = tuning_rows()
    found = [(_surest(reader, p), label) for p, label in naming]
    best_none = np.array([_surest(reader, p)[1] for p in nothing])
    rows = []
    for t in GRID:
        named = np.mean([s >= t and concept == label for (concept, s), label in found])
        empty = float(np.mean(best_none < t))
        rows.append((float(t), float(named), empty, (float(named) + empty) / 2))
    return rows


def sweep_more(reader: Reader, name_min: float) -> list[tuple[float, float, float, float]]:
    """-> (threshold, one right, two right, balanced) for each of the grid, as `more_min`:
    a tuning description alone must give exactly its concept, one beside another concept's
    name ("... next to a lighthouse") exactly both."""
    naming, _ = tuning_rows()
    rng = np.random.default_rng(0)
    concepts = reader.concepts
    pairs = [(naming[i], naming[j]) for i, j in rng.integers(len(naming), size=(300, 2))]
    # a description beside a plain name, as players join them ("... next to a lighthouse")
    pairs = [(a, (f"a {concepts[b[1]].name}", b[1])) for a, b in pairs if a[1] != b[1]]
    reader.model.name_min.fill_(name_min)
    rows = []
    for t in GRID:
        reader.model.more_min.fill_(float(t))
        one = np.mean([_got(reader, p) == {c} for p, c in naming[:300]])
        two = np.mean([_got(reader, f"{a} next to {b}") == {ca, cb} for (a, ca), (b, cb) in pairs])
        rows.append((float(t), float(one), float(two), float(one + two) / 2))
    return rows


def _got(reader: Reader, text: str) -> set[int]:
    return {m.concept.index for m in reader.things(text, known=spec.DRAWN_NAMES)}


def own_tuning(n: int = 300) -> list[tuple[str, dict[str, int]]]:
    """Tuning texts with what each asks of every own kind (-1: nothing; a prompt's unnamed sky
    and time are -1 here too, the reader's defaults are the caller's)."""
    rng, rows = np.random.default_rng(OWN_SEED), []
    for _ in range(n):
        text, _, said = phrasing.labelled_world_prompt(rng, "train")
        named = said_kinds(text, said)
        rows.append((text, {k: next((v for kk, v in named if kk == k), -1) for k in OWN_KINDS}))
        text, labels = phrasing.event_text(rng, "train")
        rows.append((text, {**labels, "biome": -1}))
    for line in (DATA / "events_written_c.tsv").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            text, kind, value = (line.split("\t") + [""])[:3]
            want = {k: -1 for k in OWN_KINDS}
            if kind in OWN_KINDS:
                want[kind] = OWN_KINDS[kind].index(value)
            rows.append((text, want))
    return rows


def said_kinds(text: str, said) -> list[tuple[str, int]]:
    return list(dict.fromkeys(x for x in phrasing.word_labels(text, said) if x is not None))


def sweep_own(reader: Reader) -> list[tuple[float, dict[str, float]]]:
    """-> (floor, % right per kind) on the tuning texts, a span naming its likeliest class
    only where that class's chance reaches the floor (0: the argmax, as served)."""
    rows = own_tuning()
    probs = [reader.read_own(text) for text, _ in rows]
    out = []
    for floor in OWN_FLOORS:
        right = {k: [] for k in OWN_KINDS}
        for (_, want), (spans, p) in zip(rows, probs, strict=True):
            got = _own_at(spans, p, floor)
            for k in OWN_KINDS:
                right[k].append(got[k] == want[k])
        out.append((floor, {k: round(100 * float(np.mean(v)), 1) for k, v in right.items()}))
    return out


def _own_at(spans, probs, floor: float) -> dict[str, int]:
    top, sure = probs.argmax(1), probs.max(1)
    taken, got = [], {k: -1 for k in OWN_KINDS}
    for i in np.argsort(-sure, kind="stable"):
        lo, hi = spans[i][1]
        if top[i] == NONE or sure[i] < floor or any(lo < b and a < hi for a, b in taken):
            continue
        taken.append((lo, hi))
        kind, value = OWN_CLASSES[int(top[i])]
        if got[kind] < 0:
            got[kind] = value
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="store the best in the weights")
    args = parser.parse_args()
    reader = Reader.load()
    naming, nothing = tuning_rows()
    print(f"tuning split: {len(naming)} naming phrases, {len(nothing)} naming nothing\n")
    rows = sweep(reader)
    print("| name_min | named right | nothing right | balanced |\n| --- | --- | --- | --- |")
    for t, named, empty, bal in rows:
        print(f"| {t:.2f} | {named:.3f} | {empty:.3f} | {bal:.3f} |")
    best = _best(rows)
    print(f"\nbest: name_min {best[0]:.2f} (balanced {best[3]:.3f})\n")
    more = sweep_more(reader, best[0])
    print("| more_min | one thing right | two things right | balanced |\n| --- | --- | --- | --- |")
    for t, one, two, bal in more:
        print(f"| {t:.2f} | {one:.3f} | {two:.3f} | {bal:.3f} |")
    second = _best(more)
    print(f"\nbest: more_min {second[0]:.2f} (balanced {second[3]:.3f})")
    print("\nThe own head: % of tuning texts read right per kind, by a floor on the class's chance")
    print("| floor | " + " | ".join(OWN_KINDS) + " |\n| --- |" + " --- |" * len(OWN_KINDS))
    for floor, right in sweep_own(reader):
        print(f"| {floor:.1f} | " + " | ".join(f"{right[k]:.1f}" for k in OWN_KINDS) + " |")
    print("served: the argmax (floor 0), no threshold")
    if args.write:
        reader.model.name_min.fill_(best[0])
        reader.model.more_min.fill_(second[0])
        reader.model.save(WEIGHTS)
        print(f"written into {WEIGHTS}")


if __name__ == "__main__":
    main()
