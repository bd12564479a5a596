"""Measuring the screening service on a labelled split (`data/<split>.tsv`).

The encoder runs once per split; thresholds are then applied to the stored scores, so a sweep
over hundreds of threshold settings costs nothing extra. `manage.py screening_eval` is the shell.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from worlds.moderation.screening.blocklist import blocklist_screen
from worlds.moderation.screening.semantic import (
    decide_semantic,
    semantic_scores,
    semantic_text,
    sentences,
)
from worlds.moderation.screening.verdicts import CATEGORIES, RANK, Screening

SPLITS_DIR = Path(__file__).resolve().parent / "data"
# Labels of harmless text: benign look-alikes ("kill the lights", "a bomb-sniffing dog") and
# ordinary conversation (dialogue with a character is screened too), counted apart.
BENIGN_LABELS = ("benign", "conversation")
LABEL_ORDER = (*CATEGORIES, *BENIGN_LABELS)


@dataclass
class Scored:
    label: str  # a category, "benign" or "conversation"
    text: str
    blocklist: Screening
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


def splits() -> list[str]:
    """The labelled splits shipped in data/ ("label<TAB>text" per line after a header)."""
    return sorted(path.stem for path in SPLITS_DIR.glob("*.tsv"))


def load_rows(split: str) -> list[tuple[str, str]]:
    lines = (SPLITS_DIR / f"{split}.tsv").read_text().splitlines()[1:]
    rows = [tuple(line.split("\t", 1)) for line in lines if line.strip()]
    unknown = {label for label, _ in rows} - set(LABEL_ORDER)
    if unknown:
        raise ValueError(f"{split}.tsv: unknown labels {sorted(unknown)}")
    return rows


def score(rows: list[tuple[str, str]], *, field: str = "description") -> list[Scored]:
    blocklisted = [blocklist_screen(text, field=field) for _, text in rows]
    chunks = [sentences(semantic_text(text, field)) for _, text in rows]
    flat = semantic_scores([c for parts in chunks for c in parts])
    out, k = [], 0
    for (label, text), hit, parts in zip(rows, blocklisted, chunks, strict=True):
        out.append(Scored(label, text, hit, flat[k : k + len(parts)]))
        k += len(parts)
    return out


def decide(item: Scored, **thresholds) -> tuple[str, str | None]:
    if item.blocklist.blocked:
        return "block", item.blocklist.category
    best = (item.blocklist.verdict, item.blocklist.category)
    for scores in item.chunk_scores:
        verdict, category, _ = decide_semantic(scores, **thresholds)
        if RANK[verdict] > RANK[best[0]]:
            best = (verdict, category)
    return best


def measure(scored: list[Scored], **thresholds) -> list[Row]:
    predictions = [decide(item, **thresholds) for item in scored]
    rows = []
    for label in LABEL_ORDER:
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
    harmful = [r for r in rows if r.label not in BENIGN_LABELS]
    return sum(r.flagged for r in harmful) / max(1, sum(r.n for r in harmful))


def false_positive_rate(rows: list[Row], label: str = "benign") -> float:
    """The share of `label` (benign look-alikes, or conversation) flagged at all."""
    benign = next(r for r in rows if r.label == label)
    return benign.flagged / max(1, benign.n)


def confusion(scored: list[Scored], **thresholds) -> dict[str, dict[str, int]]:
    """label -> {"allow" or the category it was flagged as -> count}, labels present only."""
    out: dict[str, dict[str, int]] = {}
    for item in scored:
        verdict, category = decide(item, **thresholds)
        predicted = "allow" if verdict == "allow" else category or "other"
        counts = out.setdefault(item.label, {})
        counts[predicted] = counts.get(predicted, 0) + 1
    return {label: out[label] for label in LABEL_ORDER if label in out}


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


def _steps(start: float, stop: float, step: float) -> list[float]:
    n = int(round((stop - start) / step))
    return [round(start + i * step, 4) for i in range(n + 1)]


def table(rows: list[Row]) -> str:
    """Per label: recall (or false positives), right category, blocked, precision."""
    lines = [
        f"{'category':<12} {'n':>5} {'recall':>7} {'cat.rec':>8} {'blocked':>8} {'precision':>9}",
    ]
    for r in rows:
        if r.n == 0:
            continue  # a split without this label (the generated splits predate weapons)
        precision = "-" if r.precision is None else f"{r.precision:.3f}"
        if r.label in BENIGN_LABELS:
            lines.append(
                f"{r.label:<12} {r.n:>5} {'FP ' + format(r.flagged / r.n, '.3f'):>7}"
                f" {'':>8} {r.blocked:>8} {'':>9}"
            )
            continue
        lines.append(
            f"{r.label:<12} {r.n:>5} {r.recall:>7.3f} {r.right_category / r.n:>8.3f}"
            f" {r.blocked:>8} {precision:>9}"
        )
    lines.append(
        f"harmful recall {harmful_recall(rows):.3f} · benign false positives "
        f"{false_positive_rate(rows):.3f}"
    )
    if any(r.label == "conversation" and r.n for r in rows):
        lines.append(
            f"conversation false positives {false_positive_rate(rows, 'conversation'):.3f}"
        )
    return "\n".join(lines)


def confusion_table(matrix: dict[str, dict[str, int]]) -> str:
    """Rows: the label; columns: what screening made of it (allow, or the category flagged)."""
    columns = ["allow", *CATEGORIES]
    if any("other" in counts for counts in matrix.values()):
        columns.append("other")
    width = max(len(c) for c in columns) + 1
    lines = [f"{'label':<12} {'n':>4} " + "".join(f"{c:>{width}}" for c in columns)]
    for label, counts in matrix.items():
        cells = "".join(f"{counts.get(c, 0) or '.':>{width}}" for c in columns)
        lines.append(f"{label:<12} {sum(counts.values()):>4} {cells}")
    return "\n".join(lines)
