"""Measuring the screening service on a labelled set (tests/moderation/data/*.tsv).

The encoder runs once per set; thresholds are then applied to the stored scores, so a sweep over
hundreds of threshold settings costs nothing extra. `manage.py screening_eval` is the shell;
`manage.py screening_train` fits the semantic classifier (`train`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from worlds.moderation import screening

DATA_DIR = Path(__file__).resolve().parents[2] / "tests" / "moderation" / "data"


@dataclass
class Scored:
    label: str  # a category or "benign"
    text: str
    blocklist: screening.Screening
    chunk_scores: list[dict[str, float]]


@dataclass
class Row:
    label: str
    n: int
    flagged: int  # hold or block, any category
    right_category: int
    blocked: int
    precision: float | None  # of everything flagged as this category, the share labelled so

    @property
    def recall(self) -> float:
        return self.flagged / self.n if self.n else 0.0


def load_rows(split: str) -> list[tuple[str, str]]:
    lines = (DATA_DIR / f"{split}.tsv").read_text().splitlines()[1:]
    return [tuple(line.split("\t", 1)) for line in lines if line.strip()]


def score(rows: list[tuple[str, str]], *, field: str = "description") -> list[Scored]:
    blocklisted = [screening.blocklist_screen(text, field=field) for _, text in rows]
    chunks = [screening._chunks(screening._semantic_text(text, field)) for _, text in rows]
    flat = screening.semantic_scores([c for parts in chunks for c in parts])
    out, k = [], 0
    for (label, text), hit, parts in zip(rows, blocklisted, chunks, strict=True):
        out.append(Scored(label, text, hit, flat[k : k + len(parts)]))
        k += len(parts)
    return out


def decide(item: Scored, **thresholds) -> tuple[str, str | None]:
    if item.blocklist.blocked:
        return "block", item.blocklist.category
    best = (item.blocklist.verdict, item.blocklist.category)
    rank = screening._RANK
    for scores in item.chunk_scores:
        verdict, category, _ = screening.decide_semantic(scores, **thresholds)
        if rank[verdict] > rank[best[0]]:
            best = (verdict, category)
    return best


def measure(scored: list[Scored], **thresholds) -> list[Row]:
    predictions = [decide(item, **thresholds) for item in scored]
    rows = []
    for label in (*screening.CATEGORIES, "benign"):
        mine = [(s, p) for s, p in zip(scored, predictions, strict=True) if s.label == label]
        flagged = [p for _, p in mine if p[0] != "allow"]
        as_label = [s.label for s, p in zip(scored, predictions, strict=True) if p[1] == label]
        rows.append(
            Row(
                label=label,
                n=len(mine),
                flagged=len(flagged),
                right_category=sum(1 for p in flagged if p[1] == label),
                blocked=sum(1 for p in flagged if p[0] == "block"),
                precision=(as_label.count(label) / len(as_label)) if as_label else None,
            )
        )
    return rows


def harmful_recall(rows: list[Row]) -> float:
    harmful = [r for r in rows if r.label != "benign"]
    return sum(r.flagged for r in harmful) / max(1, sum(r.n for r in harmful))


def false_positive_rate(rows: list[Row]) -> float:
    benign = next(r for r in rows if r.label == "benign")
    return benign.flagged / max(1, benign.n)


def sweep(scored: list[Scored], *, max_fp: float = 0.05) -> dict[str, float]:
    """The hold threshold with the best harmful recall at most `max_fp` benign flagged; block is
    then the lowest threshold that blocks at most 1% of the benign phrases."""
    best = None
    for hold in _steps(0.05, 0.99, 0.005):  # thresholds on the harm probability
        rows = measure(scored, hold=hold, block=9.0)
        if false_positive_rate(rows) <= max_fp:
            best = hold
            break
    if best is None:
        raise ValueError("no threshold meets the false-positive limit")
    block = 1.0
    for candidate in _steps(best, 1.0, 0.005):
        rows = measure(scored, hold=best, block=candidate)
        benign = next(r for r in rows if r.label == "benign")
        if benign.blocked / max(1, benign.n) <= 0.01:
            block = candidate
            break
    return {"hold": round(best, 3), "block": round(block, 3)}


def training_rows() -> list[tuple[str, str]]:
    """What the classifier learns from: the example sets and the tuning split, never eval."""
    examples = [(c, p) for c, phrases in screening.load_examples().items() for p in phrases]
    return examples + load_rows("tune")


def train(*, hold_fp: float = 0.02, block_fp: float = 0.005, l2: float = 1e-5):
    """Fit the semantic classifier on `training_rows()`; hold and block thresholds let through
    at most `hold_fp` / `block_fp` of the benign training phrases in 5-fold cross-validation."""
    import numpy as np

    from worlds.moderation import classifier

    rows = training_rows()
    texts = [screening.readable(text) for _, text in rows]
    labels = [label for label, _ in rows]
    embeddings = screening.embed(texts)
    harm = classifier.cross_validated_harm(embeddings, labels, l2=l2)
    benign = harm[np.array(labels) == "benign"]
    weights, bias = classifier.fit(embeddings, labels, l2=l2)
    return classifier.Classifier(
        weights,
        bias,
        hold=classifier.threshold_for(benign, hold_fp),
        block=max(
            classifier.threshold_for(benign, block_fp), classifier.threshold_for(benign, hold_fp)
        ),
    ), len(rows)


def _steps(start: float, stop: float, step: float) -> list[float]:
    n = int(round((stop - start) / step))
    return [round(start + i * step, 4) for i in range(n + 1)]


def table(rows: list[Row]) -> str:
    lines = [
        f"{'category':<10} {'n':>5} {'recall':>7} {'cat.rec':>8} {'blocked':>8} {'precision':>9}",
    ]
    for r in rows:
        precision = "-" if r.precision is None else f"{r.precision:.3f}"
        if r.label == "benign":
            lines.append(
                f"{'benign':<10} {r.n:>5} {'FP ' + format(r.flagged / max(1, r.n), '.3f'):>7}"
                f" {'':>8} {r.blocked:>8} {'':>9}"
            )
            continue
        lines.append(
            f"{r.label:<10} {r.n:>5} {r.recall:>7.3f} {r.right_category / max(1, r.n):>8.3f}"
            f" {r.blocked:>8} {precision:>9}"
        )
    lines.append(
        f"harmful recall {harmful_recall(rows):.3f} · benign false positives "
        f"{false_positive_rate(rows):.3f}"
    )
    return "\n".join(lines)
