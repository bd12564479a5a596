"""The open-vocabulary reader: which concrete things a text names, from the concept vocabulary.

A text's short spans (1 to 4 words, and the whole text) are embedded with MiniLM and read by
the trained `ReaderHead` with the whole text as context: for each span, the probability that
it names each concept of the vocabulary, or none. A span names its likeliest concept when it
is sure enough to name something (`ConceptModel.name_min`); overlapping spans keep the surer,
and a text's further things must each name something other than what was read before them
(`more_min`). Both thresholds
are fitted by `training.sweep_reader` on the tuning split. No word list and no rule for a
wording: what is read is what the data and the heads say.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from inference.world import concepts as vocab
from inference.world import text as text_encoder
from inference.world.concepts import BEHAVIOURS, Concept
from inference.world.sprites import ConceptModel

VAR_MODELS = Path(__file__).resolve().parents[2] / "var" / "models"
MAX_SPAN = 4
MAX_THINGS = 3  # things one text places at most


@dataclass(frozen=True)
class Match:
    concept: Concept
    score: float
    span: str


@dataclass(frozen=True)
class Behaviour:
    motion: str  # one of BEHAVIOURS
    light: bool


class Reader:
    def __init__(self, model: ConceptModel, concepts: tuple[Concept, ...] | None = None):
        self.model = model.eval()
        self.concepts = concepts or vocab.load()
        self._lock = threading.Lock()
        self._keys: torch.Tensor | None = None  # (N, 384) name embeddings, made on first use
        self._name_keys: torch.Tensor | None = None
        self._known_cache: dict[tuple[str, ...], tuple[torch.Tensor, frozenset[int]]] = {}

    @classmethod
    def load(cls) -> Reader:
        return cls(ConceptModel.from_file())

    @property
    def keys(self) -> torch.Tensor:
        """The concepts' name embeddings: ~3,000 names take ~10 s to embed on 2 cores, so they
        are kept in var/models/ by the vocabulary's digest (made again when it changes)."""
        with self._lock:
            if self._keys is None:
                self._keys = torch.from_numpy(_name_keys(self.concepts))
            return self._keys

    @property
    def name_keys(self) -> torch.Tensor:
        """(N, 384) the reader's side of the names (`ReaderHead.keys`), made once."""
        if self._name_keys is None:
            with torch.no_grad():
                self._name_keys = self.model.reader.keys(self.keys)
        return self._name_keys

    @torch.no_grad()
    def read(
        self, text: str, extra: torch.Tensor | None = None
    ) -> tuple[list[tuple[str, tuple[int, int]]], np.ndarray]:
        """A text's spans and (S, N + 1) the probability that each names each concept, or
        none (last column), read with the whole text as its context; ``extra`` reader keys
        (K, 384) join the vocabulary for this read as columns N..N+K-1."""
        spans = _spans(text)
        whole = " ".join(_words(text)) or text.lower()
        emb = torch.from_numpy(text_encoder.embed([s for s, _ in spans] + [whole]))
        context = emb[-1:].expand(len(spans), -1)
        keys = self.name_keys if extra is None else torch.cat([self.name_keys, extra])
        logits = self.model.reader.logits(emb[:-1], context, keys)
        return spans, torch.softmax(logits, -1).numpy()

    def ranked(self, text: str, k: int = 3) -> list[Match]:
        """The k concepts the text most surely names through any of its spans, best first
        (whatever "none" says: for measuring)."""
        spans, probs = self.read(text)
        concept = probs[:, :-1]
        best = concept.max(0)
        order = np.argsort(-best)[:k]
        return [
            Match(self.concepts[i], float(best[i]), spans[int(concept[:, i].argmax())][0])
            for i in order
        ]

    def things(
        self, text: str, limit: int = MAX_THINGS, known: tuple[str, ...] = ()
    ) -> list[Match]:
        """The concepts a text names, surest first: each span whose chance of naming some
        concept (not none) reaches the first threshold names its likeliest one (so near
        twins, "sailboat" and "speedboat", split no vote); spans overlapping a surer one are
        dropped, and a second or third thing's span must name something other than the
        things read before it at least as surely as the second threshold says.

        ``known`` names what the caller draws by itself (the world model's own creatures and
        things): they join the vocabulary for this read, and a span that names one of them, or
        the vocabulary's twin of one, holds its words but is not returned ("a path appears"
        is the model's path, not a gate beside it)."""
        extra, twins = self._known(known)
        spans, probs = self.read(text, extra)
        n = len(self.concepts)
        top, score = probs[:, :-1].argmax(1), 1 - probs[:, -1]
        floor, more = float(self.model.name_min), float(self.model.more_min)
        taken: list[tuple[int, int]] = []
        read: list[int] = []  # columns read so far, the caller's own included
        out: list[Match] = []
        for i in np.argsort(-score, kind="stable"):
            if score[i] < floor or len(out) == limit:
                break
            lo, hi = spans[i][1]
            if any(lo < b and a < hi for a, b in taken):
                continue
            # a further thing must be something else than what is read already: the words of
            # one description each lean to it or a neighbour ("a grey giant", "a trunk")
            if read and score[i] - probs[i, read].sum() < more:
                continue
            taken.append((lo, hi))
            read.append(int(top[i]))
            if top[i] >= n or top[i] in twins:
                continue  # the caller's own
            concept = self.concepts[int(top[i])]
            if all(m.concept is not concept for m in out):
                out.append(Match(concept, float(score[i]), spans[i][0]))
        return out

    def _known(self, names: tuple[str, ...]) -> tuple[torch.Tensor | None, frozenset[int]]:
        """Reader keys for the caller's own names, and their twins in the vocabulary: the
        concepts one of those names names too (the emoji fox is the model's fox), as the
        reader was trained to take them; made once per set."""
        if not names:
            return None, frozenset()
        with self._lock:
            hit = self._known_cache.get(names)
        if hit is None:
            with torch.no_grad():
                extra = self.model.reader.keys(torch.from_numpy(text_encoder.embed(list(names))))
            said = set(names)
            twins = frozenset(c.index for c in self.concepts if said & set(c.names))
            hit = (extra, twins)
            with self._lock:
                self._known_cache[names] = hit
        return hit

    @torch.no_grad()
    def behaviour(self, concept: Concept) -> Behaviour:
        emb = self.keys[concept.index][None]
        motion, light = self.model.behaviour(emb)
        return Behaviour(BEHAVIOURS[int(motion.argmax())], bool(light[0] > 0))

    @torch.no_grad()
    def sprite(self, concept: Concept) -> np.ndarray:
        """(16, 16, 4) uint8 RGBA drawn by the generator from the concept's name."""
        return self.model.draw(self.keys[concept.index][None])[0].numpy()


def _name_keys(concepts: tuple[Concept, ...]) -> np.ndarray:
    names = [c.name for c in concepts]
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
    path = VAR_MODELS / f"concept_keys-{digest}.npy"
    try:
        keys = np.load(path)
        if keys.shape == (len(names), text_encoder.TEXT_DIM):
            return keys
    except (OSError, ValueError):
        pass
    keys = text_encoder.embed(names)
    try:
        VAR_MODELS.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, keys)
        os.replace(tmp, path)  # whole or not at all: another process may read it now
    except OSError:
        pass  # a read-only checkout embeds them again next time
    return keys


_WORD = re.compile(r"[\w'-]+")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)][: text_encoder.MAX_PHRASE_WORDS]


def _spans(text: str) -> list[tuple[str, tuple[int, int]]]:
    """Every run of 1..MAX_SPAN words (lower case) with its word range, and the whole text
    (range: all of it). Runs of function words alone are left out: they name nothing."""
    words = _words(text)
    out: dict[str, tuple[int, int]] = {}
    for k in range(1, MAX_SPAN + 1):
        for i in range(len(words) - k + 1):
            run = words[i : i + k]
            if all(w in FUNCTION_WORDS for w in run):
                continue
            out.setdefault(" ".join(run), (i, i + k))
    whole = " ".join(words)
    if whole and whole not in out:
        out[whole] = (0, len(words))
    return list(out.items()) or [(text.lower(), (0, 1))]


# English function words: grammar, never a name of anything (shared by every span).
FUNCTION_WORDS = frozenset(
    """a an the this that these those some any each every of in on at by for with from to into
    onto over under above below near beside behind before after and or but so then there here
    it its is are was were be been being am do does did has have had i me my we our you your he
    him his she her they them their up down out off around through across all no not very
    just also now""".split()
)
