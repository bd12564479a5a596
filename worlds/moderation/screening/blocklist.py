"""Layer 1: the maintained blocklist (`data/blocklist.txt`), matched on every normalised form."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from worlds.moderation.screening.normalise import NormalisedText, normalise
from worlds.moderation.screening.verdicts import ALLOW, CATEGORIES, RANK, Screening, verdict_for

BLOCKLIST_PATH = Path(__file__).resolve().parent / "data" / "blocklist.txt"
_LINK = re.compile(
    r"(https?://|www\.|\b[a-z0-9-]+\.(com|net|org|biz|xyz|io|click|ly|me|info|ru|top)\b"
    r"|\bt\.me/|\bbit\.ly/|discord\.gg/)",
    re.IGNORECASE,
)


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
    for line in BLOCKLIST_PATH.read_text().splitlines():
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
        if worst is not None and RANK[entry.verdict] <= RANK[worst.verdict]:
            continue
        if _entry_matches(entry, norm):
            worst = entry
    if worst is None:
        if _LINK.search(text):
            # Links in world text are how spam travels; a moderator checks them.
            return verdict_for("hold", "spam", field, "blocklist")
        return ALLOW
    return verdict_for(worst.verdict, worst.category, field, "blocklist")


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
