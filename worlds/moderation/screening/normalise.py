"""Undoing the tricks that hide a word from a filter: case, accents, leetspeak ("k1ll"), spacing
and punctuation ("k i l l", "k.i.l.l"), repeated letters ("kiiiill"), look-alike letters and
invisible characters. `normalise` gives the forms the blocklist matches, `readable` the text the
encoder reads.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

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
