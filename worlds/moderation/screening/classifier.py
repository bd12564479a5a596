"""The semantic layer's model: softmax regression over all-MiniLM-L6-v2 sentence embeddings.

Nearest-example matching judged phrasings like the example templates well and hand-written
phrases poorly (0.74 harmful recall on `data/handwritten.tsv`); a linear model trained on every
labelled phrase generalises further. `manage.py screening_train` fits it and picks the hold and
block thresholds from cross-validated predictions on its own training data, so no evaluation
split (eval, handwritten, heldout) is seen; the weights and thresholds ship in
`data/classifier.npz`.

Django-free (like the whole `screening` package), so the inference worker can screen too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from worlds.moderation.screening.verdicts import CATEGORIES

LABELS = (*CATEGORIES, "benign")  # the classifier's outputs: every category, then none
BENIGN = LABELS.index("benign")


@dataclass(frozen=True)
class Classifier:
    weights: np.ndarray  # (384, len(LABELS)) float32
    bias: np.ndarray  # (len(LABELS),) float32
    hold: float  # harm probability (1 - P(benign)) from which text is held for review
    block: float  # ... and from which it is refused

    def probabilities(self, embeddings: np.ndarray) -> np.ndarray:
        """(N, 384) normalised embeddings -> (N, len(LABELS)) probabilities."""
        logits = embeddings.astype(np.float32) @ self.weights + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def save(self, path: Path) -> None:
        np.savez(
            path,
            weights=self.weights,
            bias=self.bias,
            thresholds=np.array([self.hold, self.block], dtype=np.float32),
            labels=np.array(LABELS),
        )

    @classmethod
    def load(cls, path: Path) -> Classifier:
        with np.load(path, allow_pickle=False) as data:
            if tuple(str(x) for x in data["labels"]) != LABELS:
                raise ValueError(f"{path}: trained for other labels {list(data['labels'])}")
            hold, block = (float(x) for x in data["thresholds"])
            return cls(data["weights"], data["bias"], hold, block)


def fit(
    embeddings: np.ndarray, labels: list[str], *, l2: float = 1e-5, balance_power: float = 0.5
) -> tuple:
    """Softmax regression with class-balanced weights -> (weights, bias), full-batch L-BFGS.

    `balance_power` 1 weighs every label the same in the loss; 0.5 (square-root balancing)
    keeps a small label (40 hand-written weapons phrases next to 1000 benign ones) from being
    weighted so much that everything near it, a war museum or a history lesson, is flagged.
    """
    import torch  # training only: loading the weights for screening needs numpy alone

    x = torch.from_numpy(embeddings.astype(np.float32))
    y = torch.tensor([LABELS.index(label) for label in labels])
    counts = torch.bincount(y, minlength=len(LABELS)).clamp(min=1).float()
    balance = (counts.sum() / (len(LABELS) * counts)) ** balance_power
    torch.manual_seed(0)
    w = torch.zeros(x.shape[1], len(LABELS), requires_grad=True)
    b = torch.zeros(len(LABELS), requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=500, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ w + b, y, weight=balance) + l2 * (w**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach().numpy(), b.detach().numpy()


def harm(probabilities: np.ndarray) -> np.ndarray:
    return 1.0 - probabilities[:, BENIGN]


def cross_validated_harm(
    embeddings: np.ndarray,
    labels: list[str],
    *,
    folds: int = 5,
    l2: float = 1e-5,
    balance_power: float = 0.5,
) -> np.ndarray:
    """Each phrase's harm probability from a model that did not train on it."""
    order = np.random.default_rng(0).permutation(len(labels))
    out = np.zeros(len(labels), dtype=np.float32)
    for k in range(folds):
        held = order[k::folds]
        train = np.setdiff1d(order, held)
        w, b = fit(
            embeddings[train], [labels[i] for i in train], l2=l2, balance_power=balance_power
        )
        out[held] = harm(Classifier(w, b, 1.0, 1.0).probabilities(embeddings[held]))
    return out


def threshold_for(benign_harm: np.ndarray, max_rate: float) -> float:
    """The lowest threshold that flags at most `max_rate` of the benign phrases."""
    ranked = np.sort(benign_harm)[::-1]
    allowed = int(np.floor(max_rate * len(ranked)))
    if allowed >= len(ranked):
        return 0.0
    return float(np.nextafter(ranked[allowed], np.float32(1.0)))
