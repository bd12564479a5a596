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
"""

from __future__ import annotations

import argparse

import numpy as np

from inference.training.concepts import DATA, DESCRIPTIONS, is_tuning, read_tsv
from inference.world import concepts as vocab
from inference.world import spec
from inference.world.reading import Reader
from inference.world.sprites import WEIGHTS

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
    if args.write:
        reader.model.name_min.fill_(best[0])
        reader.model.more_min.fill_(second[0])
        reader.model.save(WEIGHTS)
        print(f"written into {WEIGHTS}")


if __name__ == "__main__":
    main()
