"""One screening service for every piece of user text, before it is stored or applied.

Two layers, worst verdict wins:

1. A maintained blocklist (`data/blocklist.txt`) matched after normalisation: case, accents,
   leetspeak ("k1ll"), spacing and punctuation tricks ("k i l l", "k.i.l.l"), repeated letters
   ("kiiiill"), and invisible characters.
2. A semantic layer: all-MiniLM-L6-v2 embeds each sentence and a softmax regression
   (`classifier.py`, `data/classifier.npz`) gives the probability of each category and of
   benign. It is trained on the example sets (`data/examples*.txt`, benign look-alikes such as
   "kill the lights" included) and the tuning split, with hold and block thresholds from
   cross-validation on that training data; `manage.py screening_eval` measures it on splits it
   never saw.

Verdicts: "allow", "hold" (a moderator decides; publishing puts the world in review) and "block"
(refused with a message that names the category, never the matched word). Live text (in-world
prompts, dialogue) has no one to review it in time: callers treat anything but allow as refused
(`Screening.refused_live`).

This module imports no Django so the inference worker can use it too.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CATEGORIES = ("sexual", "violence", "hate", "self_harm", "spam")
CATEGORY_LABELS = {
    "sexual": "sexual content",
    "violence": "violence or gore",
    "hate": "hate or harassment",
    "self_harm": "self-harm",
    "spam": "spam",
}
FIELD_LABELS = {
    "username": "username",
    "display_name": "display name",
    "title": "title",
    "description": "description",
    "prompt": "world description",
    "story_opening": "story opening",
    "character_name": "character name",
    "character_persona": "character card",
    "character_greeting": "character greeting",
    "event": "prompt",
    "say": "message",
    "note": "note",
    "reason": "reason",
}
_RANK = {"allow": 0, "hold": 1, "block": 2}
DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Screening:
    verdict: str  # "allow" | "hold" | "block"
    category: str | None  # sexual, violence, hate, self_harm, spam (None when allowed)
    message: str  # user-facing: names the category, never the matched word
    field: str = ""  # which field decided the verdict (screen_fields)
    layer: str = ""  # "blocklist" | "semantic" | "": for moderators and the evaluation
    score: float = 0.0  # the harm probability that decided it (0 for the blocklist)

    @property
    def allowed(self) -> bool:
        return self.verdict == "allow"

    @property
    def held(self) -> bool:
        return self.verdict == "hold"

    @property
    def blocked(self) -> bool:
        return self.verdict == "block"

    @property
    def refused_live(self) -> bool:
        """Live text (prompts, dialogue) cannot wait for a moderator: hold counts as refused."""
        return self.verdict != "allow"


ALLOW = Screening("allow", None, "")


def _message(verdict: str, category: str, field: str) -> str:
    what = FIELD_LABELS.get(field, field.replace("_", " ") or "text")
    label = CATEGORY_LABELS[category]
    if verdict == "block":
        return f"Your {what} was refused: it looks like {label}, which Parallax does not allow."
    return f"Your {what} needs a moderator's review: it may contain {label}."


def _verdict(verdict: str, category: str, field: str, layer: str, score: float = 0.0):
    return Screening(verdict, category, _message(verdict, category, field), field, layer, score)


# --- Layer 1: normalisation and the blocklist -------------------------------------------------

_LEET = str.maketrans(
    {
        "0": "o", "1": "i", "2": "z", "3": "e", "4": "a", "5": "s", "6": "g", "7": "t",
        "8": "b", "9": "g", "@": "a", "$": "s", "!": "i", "|": "i", "+": "t", "€": "e",
        "£": "l", "¡": "i", "¢": "c",
    }
)  # fmt: skip
# Letters that look Latin but are not (Cyrillic, Greek) and are used to dodge filters.
_CONFUSABLES = str.maketrans(
    {
        "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i",
        "к": "k", "м": "m", "т": "t", "н": "h", "в": "b", "ѕ": "s", "ј": "j", "ԁ": "d",
        "α": "a", "ο": "o", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "τ": "t", "υ": "u",
        "ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "þ": "th",
    }
)  # fmt: skip
_INVISIBLE = re.compile(r"[\u00ad\u200b-\u200f\u2028-\u202f\u2060-\u206f\ufeff]")
_CHUNK_EDGE = re.compile(r"^[^\w@$|+€£¡¢]+|[^\w]+$")
_NON_LETTERS = re.compile(r"[^a-z]+")
_REPEATS = re.compile(r"(.)\1+")
_LINK = re.compile(
    r"(https?://|www\.|\b[a-z0-9-]+\.(com|net|org|biz|xyz|io|click|ly|me|info|ru|top)\b"
    r"|\bt\.me/|\bbit\.ly/|discord\.gg/)",
    re.IGNORECASE,
)
_TRAILING_NUMBER = re.compile(r"(?<=[a-z])\d{2,}$")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def _squeeze(word: str) -> str:
    # "kiiiilll" and "kill" both become "kil": repeated letters never dodge the list.
    return _REPEATS.sub(r"\1", word)


def _fold(text: str) -> str:
    text = _INVISIBLE.sub("", text)
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return text.casefold().translate(_CONFUSABLES)


def _chunk_letters(chunk: str) -> str:
    """A whitespace-free chunk as letters: leetspeak decoded only where letters are around."""
    chunk = _CHUNK_EDGE.sub("", chunk)  # "die!!" keeps its "!" out of the word
    chunk = _TRAILING_NUMBER.sub("", chunk)  # "slayer99": a number suffix is not leetspeak
    if len(chunk) == 1:
        return chunk.translate(_LEET)  # one spaced-out character: "k 1 l l"
    if not re.search(r"[a-z]", chunk):
        return _NON_LETTERS.sub(" ", chunk)  # a bare number stays a number (dropped)
    return chunk.translate(_LEET)


@dataclass(frozen=True)
class NormalisedText:
    words: tuple[str, ...]  # squeezed words, punctuation as separators, letter runs merged
    compact_chunks: tuple[str, ...]  # each whitespace chunk with its punctuation removed
    spaced_runs: tuple[str, ...]  # "k i l l y o u" style runs, joined


def normalise(text: str) -> NormalisedText:
    """Every form the blocklist is matched against (see the module docstring)."""
    text = _CAMEL.sub(" ", text)  # "KillYourself" as a username
    folded = _fold(text)
    words: list[str] = []
    compact: list[str] = []
    spaced: list[str] = []
    run: list[str] = []

    def close_run() -> None:
        if len(run) >= 3:
            spaced.append(_squeeze("".join(run)))
            words.append(_squeeze("".join(run)))
        else:
            words.extend(run)
        run.clear()

    for chunk in folded.split():
        letters = _chunk_letters(chunk)
        compact_chunk = _squeeze(_NON_LETTERS.sub("", letters))
        if compact_chunk:
            compact.append(compact_chunk)
        for part in _NON_LETTERS.split(letters):
            if not part:
                continue
            if len(part) == 1:
                run.append(part)  # "k i l l" or "k.i.l.l": single letters merge into one word
                continue
            close_run()
            words.append(_squeeze(part))
    close_run()
    return NormalisedText(tuple(words), tuple(compact), tuple(spaced))


_SEPARATED = re.compile(r"^(?:[a-z][.\-_*])+[a-z]$")  # "h.a.n.g", "k-i-l-l"
_LONG_RUNS = re.compile(r"(.)\1{2,}")


def readable(text: str) -> str:
    """The text as the encoder should read it: the same tricks undone, but words kept whole
    ("kill" stays "kill", only runs of three or more letters shrink)."""
    out: list[str] = []
    run: list[str] = []
    for chunk in _fold(text).split():
        core = _CHUNK_EDGE.sub("", chunk)
        if len(core) > 1 and re.search(r"[a-z]", core) and re.search(r"[0-9@$|+!€£]", core):
            chunk = chunk.replace(core, _TRAILING_NUMBER.sub("", core).translate(_LEET))
        if _SEPARATED.match(core):
            chunk = re.sub(r"[.\-_*]", "", core)
        chunk = _LONG_RUNS.sub(r"\1", chunk)
        if len(chunk) == 1 and chunk.isalpha():
            run.append(chunk)  # "h a n g i n g" reads as "hanging"
            continue
        if run:
            out.append("".join(run))
            run.clear()
        out.append(chunk)
    if run:
        out.append("".join(run))
    return " ".join(out)


@dataclass(frozen=True)
class BlockEntry:
    category: str
    verdict: str
    words: tuple[str, ...]  # squeezed
    prefix: bool  # the last word may have any ending

    def matches_at(self, words: tuple[str, ...], i: int) -> bool:
        if i + len(self.words) > len(words):
            return False
        for k, word in enumerate(self.words):
            candidate = words[i + k]
            last = k == len(self.words) - 1
            if candidate == word or (last and self.prefix and candidate.startswith(word)):
                continue
            return False
        return True


@lru_cache(maxsize=1)
def blocklist() -> tuple[BlockEntry, ...]:
    entries = []
    for line in (DATA_DIR / "blocklist.txt").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        category, verdict, phrase = line.split(None, 2)
        if category not in CATEGORIES or verdict not in ("hold", "block"):
            raise ValueError(f"bad blocklist line: {line!r}")
        prefix = phrase.endswith("*")
        words = normalise(phrase.rstrip("*")).words
        entries.append(BlockEntry(category, verdict, words, prefix))
    return tuple(entries)


def _compact(entry: BlockEntry) -> str:
    return "".join(entry.words)


def blocklist_screen(text: str, *, field: str = "text") -> Screening:
    """The blocklist layer alone: the worst entry that matches any normalised form."""
    norm = normalise(text)
    worst: BlockEntry | None = None
    for entry in blocklist():
        if worst is not None and _RANK[entry.verdict] <= _RANK[worst.verdict]:
            continue
        if _entry_matches(entry, norm):
            worst = entry
    if worst is None:
        if _LINK.search(text):
            # Links in world text are how spam travels; a moderator checks them.
            return _verdict("hold", "spam", field, "blocklist")
        return ALLOW
    return _verdict(worst.verdict, worst.category, field, "blocklist")


def _entry_matches(entry: BlockEntry, norm: NormalisedText) -> bool:
    if any(entry.matches_at(norm.words, i) for i in range(len(norm.words))):
        return True
    compact = _compact(entry)
    if len(compact) < 4:
        return False  # too short to find inside a glued chunk without false alarms
    # "k.i.l.l.y.o.u.r.s.e.l.f" and "k i l l y o u r s e l f": deliberate spacing is a strong
    # signal, so a substring is enough there. A glued chunk ("kill-urself", "p0rn!") must match
    # whole or, for prefix entries, from its start.
    if any(compact in run for run in norm.spaced_runs):
        return True
    for chunk in norm.compact_chunks:
        if chunk == compact or (entry.prefix and chunk.startswith(compact)):
            return True
    return False


# --- Layer 2: a classifier on sentence embeddings -------------------------------------------

_MAX_CHUNKS = 12
CLASSIFIER_PATH = DATA_DIR / "classifier.npz"  # written by `manage.py screening_train`

_classifier_lock = threading.Lock()
_classifier = None


def classifier():
    """The semantic layer's trained model and its thresholds, loaded once per process."""
    global _classifier
    if _classifier is None:
        from worlds.moderation.classifier import Classifier

        with _classifier_lock:
            if _classifier is None:
                _classifier = Classifier.load(CLASSIFIER_PATH)
    return _classifier


def text_encoder():
    """The process's one all-MiniLM-L6-v2 (shared with the world model), loaded lazily."""
    from inference import text as inference_text  # Django-free, so both sides can share it

    return inference_text.load_encoder("cpu")


def load_examples() -> dict[str, list[str]]:
    examples: dict[str, list[str]] = {c: [] for c in (*CATEGORIES, "benign")}
    lines = []
    for name in ("examples.txt", "examples_generated.txt"):
        path = DATA_DIR / name
        if path.exists():
            lines += path.read_text().splitlines()
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        category, phrase = (part.strip() for part in line.split("|", 1))
        examples[category].append(phrase)
    return examples


def embed(texts: list[str]):
    import numpy as np

    from inference import text as inference_text  # one encode at a time, shared with the worker

    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    return inference_text.embed(texts)


def _chunks(text: str) -> list[str]:
    # Mean pooling dilutes one bad sentence in a long description: score sentences separately.
    parts = [p.strip() for p in re.split(r"(?<=[.!?;\n])\s+", text) if p.strip()]
    if len(parts) > _MAX_CHUNKS:
        parts = parts[: _MAX_CHUNKS - 1] + [" ".join(parts[_MAX_CHUNKS - 1 :])]
    return parts or [text]


def semantic_scores(texts: list[str]) -> list[dict[str, float]]:
    """Per text: the probability of each category and of "benign"."""
    from worlds.moderation.classifier import LABELS

    probabilities = classifier().probabilities(embed(texts))
    return [dict(zip(LABELS, map(float, row), strict=True)) for row in probabilities]


def decide_semantic(
    scores: dict[str, float], *, hold: float | None = None, block: float | None = None
) -> tuple[str, str | None, float]:
    """-> (verdict, most likely harmful category, harm probability = 1 - P(benign))."""
    model = classifier()
    hold = model.hold if hold is None else hold
    block = model.block if block is None else block
    category = max(CATEGORIES, key=lambda c: scores[c])
    harm = 1.0 - scores["benign"]
    if harm >= block:
        return "block", category, harm
    if harm >= hold:
        return "hold", category, harm
    return "allow", None, harm


def semantic_screen(text: str, *, field: str = "text") -> Screening:
    return semantic_screen_many([text], field=field)[0]


def semantic_screen_many(texts: list[str], *, field: str = "text", **thresholds) -> list[Screening]:
    """The semantic layer over many texts in one batch; a text's worst sentence decides."""
    chunks = [_chunks(text) for text in texts]
    flat = [chunk for parts in chunks for chunk in parts]
    scores = iter(semantic_scores(flat)) if flat else iter(())
    out = []
    for parts in chunks:
        worst = ALLOW
        for _ in parts:
            verdict, category, score = decide_semantic(next(scores), **thresholds)
            if _RANK[verdict] > _RANK[worst.verdict] or (
                verdict == worst.verdict != "allow" and score > worst.score
            ):
                worst = _verdict(verdict, category, field, "semantic", score)
        out.append(worst)
    return out


# --- The service ------------------------------------------------------------------------------

_SINGLE_NAME_FIELDS = {"username", "display_name", "character_name"}


def screen_text(text: str, *, field: str) -> Screening:
    """Screen one piece of user text. `field` names it in the message ("title", "event", ...)."""
    return screen_texts([text], field=field)[0]


def screen_texts(texts: list[str], *, field: str, **thresholds) -> list[Screening]:
    """Screen many texts of one kind in a single encoder batch (evaluation, bulk checks)."""
    results = [blocklist_screen(t, field=field) if t and t.strip() else ALLOW for t in texts]
    pending = [i for i, r in enumerate(results) if not r.blocked and texts[i].strip()]
    semantic_texts = [_semantic_text(texts[i], field) for i in pending]
    semantic = semantic_screen_many(semantic_texts, field=field, **thresholds)
    for i, result in zip(pending, semantic, strict=True):
        if field in _SINGLE_NAME_FIELDS and result.held:
            continue  # a name is too short to judge by meaning unless it is plainly bad
        if _RANK[result.verdict] > _RANK[results[i].verdict]:
            results[i] = result
    return results


def _semantic_text(text: str, field: str) -> str:
    if field in _SINGLE_NAME_FIELDS:
        # "dark_lord_99" reads as words to the encoder, not as an identifier.
        return " ".join(normalise(text).words) or text
    return readable(text)


def screen_fields(fields: dict[str, str]) -> Screening:
    """Screen several fields of one object; the worst verdict wins (first field on ties)."""
    worst = ALLOW
    for field, text in fields.items():
        result = screen_text(text or "", field=field)
        if _RANK[result.verdict] > _RANK[worst.verdict]:
            worst = result
            if worst.blocked:
                break
    return worst
