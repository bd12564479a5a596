"""The text reader: what a text names, of the world model's own vocabulary and of the open one.

A text's short spans (1 to 4 words, and the whole text) are embedded with MiniLM and read by
two trained `ReaderHead`s with the whole text as context, each giving, per span, the
probability that it names each name of a vocabulary, or none:
- the own head (`OwnReaderModel`) reads the world model's own places, skies, times of day,
  creatures and things, whose names are the data file `data/own_names.json`, each span with
  its window too (a word either side: "bear the cold" is no bear). A class's
  chance is the sum of its names'; a span names the likeliest class where that is not "none"
  (a calibrated class of its own: no threshold), and overlapping spans keep the surer
  (`Reader.own`);
- the concept head (`ConceptModel`) reads the open vocabulary (`weights/concepts.json`). A span
  names its likeliest concept when it is sure enough to name something (`name_min`);
  overlapping spans keep the surer, and a text's further things must each name something
  other than what was read before them (`more_min`). Both thresholds are fitted by
  `training.sweep_reader` on the tuning split (`Reader.things`).
No word list but English function words, and no rule for a wording: what is read is what the
data and the heads say; a misread is fixed by data or a model change.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import torch

from inference.world import concepts as vocab
from inference.world import spec
from inference.world import text as text_encoder
from inference.world.concepts import BEHAVIOURS, Concept
from inference.world.sprites import OWN_WEIGHTS, ConceptModel, OwnReaderModel

VAR_MODELS = Path(__file__).resolve().parents[2] / "var" / "models"
MAX_SPAN = 4
MAX_THINGS = 3  # things one text places at most
OWN_NAMES = Path(__file__).parent / "data" / "own_names.json"
OWN_KINDS = {
    "biome": spec.BIOMES,
    "weather": spec.WEATHERS,
    "time": spec.TIMES,
    "creature": spec.CREATURES,
    "thing": spec.THINGS,
}
# the own head's classes, (kind, index) in this order; "none" comes after them
OWN_CLASSES = tuple((k, i) for k, values in OWN_KINDS.items() for i in range(len(values)))
NONE = len(OWN_CLASSES)
OWN_SLICES = {
    kind: slice(OWN_CLASSES.index((kind, 0)), OWN_CLASSES.index((kind, 0)) + len(values))
    for kind, values in OWN_KINDS.items()
}


@cache
def own_names(path: Path = OWN_NAMES) -> tuple[tuple[int, str], ...]:
    """(class, name) for every name of the own vocabulary's data file."""
    data = json.loads(path.read_text())
    said = [data[kind][OWN_KINDS[kind][i]] for kind, i in OWN_CLASSES]
    return tuple((c, name) for c, names in enumerate(said) for name in names)


_shared: Reader | None = None
_shared_lock = threading.Lock()


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
    def __init__(
        self,
        model: ConceptModel,
        concepts: tuple[Concept, ...] | None = None,
        own: OwnReaderModel | None = None,
        own_rows: tuple[tuple[int, str], ...] | None = None,
    ):
        self.model = model.eval()
        self.concepts = concepts or vocab.load()
        self.own_model = (own or OwnReaderModel()).eval()  # untrained: tests of the things
        self.own_rows = own_rows  # (class, name) in place of the data file's (the tune split)
        # the chance a span's class needs to be named (the reader's third threshold, fitted by
        # `evaluate_reading --sweep-own-min` on the tune split and kept with the weights)
        self.own_min = float(self.own_model.own_min)
        self._lock = threading.Lock()
        self._keys: torch.Tensor | None = None  # (N, 384) name embeddings, made on first use
        self._name_keys: torch.Tensor | None = None
        self._own_keys: tuple[torch.Tensor, torch.Tensor] | None = None
        self._known_cache: dict[tuple[str, ...], tuple[torch.Tensor, frozenset[int]]] = {}

    @classmethod
    def load(cls) -> Reader:
        return cls(ConceptModel.from_file(), own=OwnReaderModel.from_file(OWN_WEIGHTS))

    @classmethod
    def shared(cls) -> Reader:
        """The process's one reader of the shipped weights (the engine's, and the story
        grounding's), loaded on first use."""
        global _shared
        with _shared_lock:
            if _shared is None:
                _shared = cls.load()
            return _shared

    @property
    def keys(self) -> torch.Tensor:
        """The concepts' name embeddings: ~3,000 names take ~10 s to embed on 2 cores, so they
        are kept in var/models/ by the vocabulary's digest (made again when it changes)."""
        with self._lock:
            if self._keys is None:
                self._keys = torch.from_numpy(_name_keys(tuple(c.name for c in self.concepts)))
            return self._keys

    @property
    def name_keys(self) -> torch.Tensor:
        """(N, 384) the reader's side of the names (`ReaderHead.keys`), made once."""
        if self._name_keys is None:
            with torch.no_grad():
                self._name_keys = self.model.reader.keys(self.keys)
        return self._name_keys

    @property
    def own_keys(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(N, 384) the own head's keys of the own names, and (N, C) which class each is."""
        if self._own_keys is None:
            rows = self.own_rows or own_names()
            names = torch.from_numpy(_name_keys(tuple(n for _, n in rows), "own_keys"))
            with torch.no_grad():
                keys = self.own_model.reader.keys(names)
            of = torch.zeros(len(rows), NONE)
            of[torch.arange(len(rows)), torch.tensor([c for c, _ in rows])] = 1.0
            self._own_keys = (keys, of)
        return self._own_keys

    @staticmethod
    def embedded(text: str) -> tuple[list[tuple[str, tuple[int, int]]], torch.Tensor, torch.Tensor]:
        """A text's spans, (S, 384) their embeddings and (S, 384) the whole text's (context)."""
        spans = _spans(text)
        whole = " ".join(_words(text)) or text.lower()
        emb = torch.from_numpy(text_encoder.embed([s for s, _ in spans] + [whole]))
        return spans, emb[:-1], emb[-1:].expand(len(spans), -1)

    @torch.no_grad()
    def read(
        self, text: str, extra: torch.Tensor | None = None
    ) -> tuple[list[tuple[str, tuple[int, int]]], np.ndarray]:
        """A text's spans and (S, N + 1) the probability that each names each concept, or
        none (last column), read with the whole text as its context; ``extra`` reader keys
        (K, 384) join the vocabulary for this read as columns N..N+K-1."""
        spans, emb, context = self.embedded(text)
        keys = self.name_keys if extra is None else torch.cat([self.name_keys, extra])
        logits = self.model.reader.logits(emb, context, keys)
        return spans, torch.softmax(logits, -1).numpy()

    @torch.no_grad()
    def read_own(self, text: str) -> tuple[list[tuple[str, tuple[int, int]]], np.ndarray]:
        """A text's spans and (S, C + 1) the probability that each names each class of the
        own vocabulary (`OWN_CLASSES`), or none (last column)."""
        spans, emb, context = self.embedded(text)
        keys, of = self.own_keys
        if self.own_model.cfg.window:
            words = _words(text)
            around = text_encoder.embed([window(words, at) for _, at in spans])
            logits = self.own_model.reader.logits(emb, context, keys, torch.from_numpy(around))
        else:
            logits = self.own_model.reader.logits(emb, context, keys)
        probs = torch.softmax(logits, -1)
        return spans, torch.cat([probs[:, :-1] @ of, probs[:, -1:]], -1).numpy()

    def own(self, text: str) -> dict[str, list[int]]:
        """Per kind of `OWN_KINDS`, the values the text's spans name, surest first: a span
        names its likeliest class unless that is none or less likely than `own_min`, and a
        span overlapping a surer naming one is dropped (each word names one thing)."""
        spans, probs = self.read_own(text)
        top, sure = probs.argmax(1), probs.max(1)
        taken: list[tuple[int, int]] = []
        out: dict[str, list[int]] = {kind: [] for kind in OWN_KINDS}
        for i in np.argsort(-sure, kind="stable"):
            lo, hi = spans[i][1]
            if top[i] == NONE or sure[i] < self.own_min or any(lo < b and a < hi for a, b in taken):
                continue
            taken.append((lo, hi))
            kind, value = OWN_CLASSES[int(top[i])]
            if value not in out[kind]:
                out[kind].append(value)
        return out

    def own_chances(self, text: str) -> dict[str, np.ndarray]:
        """Per kind of `OWN_KINDS`, (values,) each value's chance by the span surest of it."""
        _, probs = self.read_own(text)
        best = probs[:, :-1].max(0)
        return {kind: best[OWN_SLICES[kind]] for kind in OWN_KINDS}

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


def _name_keys(names: tuple[str, ...], tag: str = "concept_keys") -> np.ndarray:
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
    path = VAR_MODELS / f"{tag}-{digest}.npy"
    try:
        keys = np.load(path)
        if keys.shape == (len(names), text_encoder.TEXT_DIM):
            return keys
    except (OSError, ValueError):
        pass
    keys = text_encoder.embed(list(names))
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


def window(words: list[str], at: tuple[int, int]) -> str:
    """A span with the word before and the word after it (as far as the text goes)."""
    lo, hi = at
    return " ".join(words[max(0, lo - 1) : hi + 1]) or " ".join(words)


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
