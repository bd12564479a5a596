"""Fit the intent head (``intents.py``) and write ``data/intent_head.npz``.

    .venv/bin/python -m inference.narrative.intent_training            # fit, measure, save
    .venv/bin/python -m inference.narrative.intent_training --dry-run  # fit and measure only

The head learns from the train split alone; the tuning split only picks its threshold (the
lowest that keeps the best accuracy there) and is measured, never learnt from.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from inference.narrative import intents
from inference.world import text as text_encoder


@dataclass(frozen=True)
class TrainingConfig:
    l2: float = 1e-4  # weight decay of the softmax regression
    # 1: every label weighs the same in the loss; "other" has about twice the rows of the rest
    balance_power: float = 1.0
    max_iter: int = 500  # L-BFGS iterations (full batch: a few hundred lines)


def fit(
    embeddings: np.ndarray, labels: list[str], config: TrainingConfig = TrainingConfig()
) -> tuple[np.ndarray, np.ndarray]:
    """Softmax regression with class-balanced weights -> (weights, bias)."""
    import torch  # training only: reading the head needs numpy alone

    x = torch.from_numpy(embeddings.astype(np.float32))  # (N, 384)
    y = torch.tensor([intents.LABELS.index(label) for label in labels])
    n_labels = len(intents.LABELS)
    counts = torch.bincount(y, minlength=n_labels).clamp(min=1).float()
    balance = (counts.sum() / (n_labels * counts)) ** config.balance_power
    torch.manual_seed(0)
    w = torch.zeros(x.shape[1], n_labels, requires_grad=True)
    b = torch.zeros(n_labels, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=config.max_iter, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        logits = x @ w + b  # (N, L)
        loss = torch.nn.functional.cross_entropy(logits, y, weight=balance)
        loss = loss + config.l2 * (w**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach().numpy(), b.detach().numpy()


def accuracy(head: intents.IntentHead, rows: list[tuple[str, str]]) -> float:
    predicted = head.labels(text_encoder.embed([text for _, text in rows]))
    return sum(p == label for p, (label, _) in zip(predicted, rows, strict=True)) / len(rows)


def pick_threshold(weights: np.ndarray, bias: np.ndarray, tune: list[tuple[str, str]]) -> float:
    """The lowest confidence threshold with the best accuracy on the tuning split."""
    best, best_accuracy = 0.0, -1.0
    for threshold in np.arange(0.0, 0.95, 0.05):
        candidate = intents.IntentHead(weights, bias, float(threshold))
        score = accuracy(candidate, tune)
        if score > best_accuracy:
            best, best_accuracy = float(round(threshold, 2)), score
    return best


def train(config: TrainingConfig = TrainingConfig()) -> intents.IntentHead:
    rows = intents.load_split("train")
    weights, bias = fit(
        text_encoder.embed([text for _, text in rows]), [r[0] for r in rows], config
    )
    return intents.IntentHead(
        weights, bias, pick_threshold(weights, bias, intents.load_split("tune"))
    )


def confusion(head: intents.IntentHead, rows: list[tuple[str, str]]) -> str:
    """Rows: the label; columns: what the head made of it."""
    predicted = head.labels(text_encoder.embed([text for _, text in rows]))
    width = max(map(len, intents.LABELS)) + 1
    lines = [f"{'label':<10}" + "".join(f"{c:>{width}}" for c in intents.LABELS)]
    for label in intents.LABELS:
        got = [p for p, (truth, _) in zip(predicted, rows, strict=True) if truth == label]
        lines.append(
            f"{label:<10}" + "".join(f"{got.count(c) or '.':>{width}}" for c in intents.LABELS)
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="measure, do not save")
    args = parser.parse_args(argv)
    head = train()
    train_rows, tune_rows = intents.load_split("train"), intents.load_split("tune")
    print(f"threshold {head.min_confidence:.2f}")
    print(f"train accuracy {accuracy(head, train_rows):.3f} ({len(train_rows)} lines)")
    print(f"tune accuracy {accuracy(head, tune_rows):.3f} ({len(tune_rows)} lines)")
    print(confusion(head, tune_rows))
    if not args.dry_run:
        head.save(intents.HEAD_PATH)
        print(f"wrote {intents.HEAD_PATH}")


if __name__ == "__main__":
    main()
