"""What every generated line goes through before anyone sees it.

A small model's raw text runs on past a sentence, repeats itself, or says it is "an AI
assistant". Here it is cut to whole sentences within a length, cleared of talk about being a
model, and screened with the same screening as user text (``Screen``, passed in by the web side:
this package is Django-free). Streaming reads pieces until a stop condition or the deadline.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

# True when the text may be shown. The worker's entry points pass moderation's play screening.
Screen = Callable[[str], bool]


def allow_all(text: str) -> bool:
    return True


_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]?(?=\s|$)")


@dataclass(frozen=True)
class SafetyNet:
    """What no generated line may say, from one list (``data/safety_net.txt``): talk of being
    a model or an assistant, and a speaker calling itself a machine where its persona is not
    one. Whole words and phrases, so a fix is an entry for a class of lines, not a rule."""

    talk: re.Pattern[str]
    machine_self: re.Pattern[str]
    machine_persona: re.Pattern[str]

    @classmethod
    def load(cls, path: Path) -> SafetyNet:
        entries: dict[str, list[str]] = {"talk": [], "machine": [], "persona": []}
        for line in path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                kind, entry = (part.strip() for part in line.split("|", 1))
                entries[kind].append(entry)
        # an entry with capitals ("AI") matches only so; the rest in any case
        talk = "|".join(
            re.escape(e) if e != e.lower() else f"(?i:{re.escape(e)})" for e in entries["talk"]
        )
        machines = "|".join(map(re.escape, entries["machine"]))
        persona = "|".join(map(re.escape, entries["machine"] + entries["persona"]))
        return cls(
            talk=re.compile(rf"(?<!\w)(?:{talk})(?!\w)"),
            # "I'm (just) (a) (simple) robot", not "I'm not a robot" nor "a machine operator"
            machine_self=re.compile(
                r"\b(?:i'm|i am|im)\s+(?!not\b|no\b|never\b)"
                r"(?:just |only |really |actually |simply |merely )?(?:an? )?(?:[\w'-]+ )?"
                rf"({machines})s?\b(?!\s*[\w'-]*(?:er|or|ist|man)\b)",
                re.I,
            ),
            machine_persona=re.compile(rf"\b({persona})s?\b", re.I),
        )


SAFETY_NET = SafetyNet.load(Path(__file__).resolve().parent / "data" / "safety_net.txt")


def clean(text: str) -> str:
    return " ".join(str(text).replace("\u200b", "").split())


def sentences(text: str) -> list[str]:
    """Whole sentences of `text` (the unfinished tail is dropped)."""
    text = clean(text)
    out, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[start : match.end()].strip()
        if piece:
            out.append(piece)
        start = match.end()
    return out


def trim_to_sentences(text: str, *, max_chars: int = 220, max_sentences: int = 2) -> str:
    """At most `max_sentences` whole sentences within `max_chars`; a text with no sentence end
    keeps its words up to the limit and gains a full stop."""
    text = clean(text)
    whole = [s for s in sentences(text) if not talks_about_being_a_model(s)]
    if not whole:
        if talks_about_being_a_model(text) or not text:
            return ""
        words = text[:max_chars].rsplit(" ", 1)[0] if len(text) > max_chars else text
        words = words.rstrip(",;:-– ")
        return (words + ".") if len(words.split()) >= 3 else ""
    out = ""
    for sentence in (_balanced(s) for s in whole[:max_sentences]):
        if len(out) + len(sentence) + 1 > max_chars:
            break
        out = f"{out} {sentence}".strip()
    return out or _clip_words(whole[0], max_chars)


def _balanced(sentence: str) -> str:
    """A sentence without quote marks that close nothing (small models leave them about)."""
    if sentence.count('"') % 2:
        sentence = sentence.replace('"', "")
    return sentence.strip()


def has_letters(text: str) -> bool:
    return any(c.isalpha() for c in text)


def talks_about_being_a_model(text: str) -> bool:
    return bool(SAFETY_NET.talk.search(text))


def without_recital(text: str, card: str) -> str:
    """`text` less the sentences that recite the character card (small models answer "who are
    you?" with the persona word for word): a reply speaks as the character, not about it."""
    said = {_words(s) for s in sentences(card) or [card]} - {""}
    return " ".join(s for s in sentences(text) if not any(c in _words(s) for c in said))


ECHO_WORDS = 5  # a line repeating this many words in a row of another repeats it


def echoes(line: str, others: Iterable[str], run: int = ECHO_WORDS) -> bool:
    """Whether `line` repeats `run` words in a row of one of `others`: a small model ends line
    after line with the same clause ("…, and a thunderstorm rolls in."), or gives a character
    the same reply turn after turn, which a similarity of whole lines does not catch when the
    rest differs. A line of three or four words echoes another that holds all of it; one of two
    words, another that has it for a whole sentence ("The Kraken!" began Captain Sol's replies
    turn after turn)."""
    words = _words(line).split()
    if len(words) == 2:
        said = {_words(s) for other in others for s in sentences(other)}
        return " ".join(words) in said
    run = min(run, max(len(words), 3))  # a short line echoes where all of it runs alike
    runs = {" ".join(words[i : i + run]) for i in range(len(words) - run + 1)}
    keys = [f" {_words(other)} " for other in others]
    return any(f" {r} " in key for key in keys for r in runs)


# "My name is Elian", "I'm Captain Elen", "call me Eryndorth", "My name is...Eira": the name a
# speaker gives itself (an ellipsis may come before it, a full stop may not: "Yes, I am. It was").
_SELF_NAMED = re.compile(
    r"\b(?i:my name is|my name's|name's|i am called|i'm called|i am named|i'm named|call me|"
    r"i am|i'm)(?:\.\.\.|…|[\s,:\"'])+((?:[A-Z][\w'-]*)(?:\s+[A-Z][\w'-]*)*)"
)
_NOT_NAMES = {"i", "a", "an", "the", "not", "so", "just", "here", "sorry", "afraid", "glad",
              "fine", "ok", "okay", "sure", "no", "yes", "well", "oh", "ah"}  # fmt: skip


def other_name(text: str, name: str) -> str:
    """The name a line's speaker calls itself where that is not `name` ("" when it gives none,
    or its own): a 135M model playing Old Tom says "My name is Elian" as the talk goes on."""
    own = set(_words(name).split())
    for match in _SELF_NAMED.finditer(text):
        words = [w for w in _words(match.group(1)).split() if w not in _NOT_NAMES]
        if set(words) - own:
            return match.group(1)
    return ""


_DISOWNED = re.compile(r"\b(?:i'm not|i am not|i'm no|i am no)\s+(?:an?\s+)?([\w'-]+)", re.I)


def disowns(text: str, persona: str) -> bool:
    """Whether the speaker says it is not what its persona says it is ("I'm not a
    cartographer." from the cartographer)."""
    card = set(_words(persona).split())
    return any(m.group(1).lower() in card for m in _DISOWNED.finditer(text) if len(m.group(1)) > 3)


def calls_itself_a_machine(text: str, persona: str) -> bool:
    """Whether the speaker says it is a robot, a machine or the like where its persona is not
    one ("I'm a robot" from the cartographer; the clockwork owl may say so)."""
    return bool(SAFETY_NET.machine_self.search(text)) and not SAFETY_NET.machine_persona.search(
        persona
    )


def breaks_safety_net(text: str, persona: str = "") -> bool:
    """Whether a generated line talks of being a model or calls its speaker a machine."""
    return talks_about_being_a_model(text) or calls_itself_a_machine(text, persona)


def _words(text: str) -> str:
    return " ".join(re.findall(r"[\w']+", text.lower()))


def strip_role(text: str, names: Iterable[str] = ()) -> str:
    """'Old Tom: Hmph.' -> 'Hmph.' (small models echo the speaker's name)."""
    text = clean(text)
    for name in names:
        if name and text.lower().startswith(name.lower() + ":"):
            return text[len(name) + 1 :].strip()
    return text


def _clip_words(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def read_stream(
    pieces: Iterable[str],
    *,
    deadline: float,
    stop_when: Callable[[str], bool] | None = None,
    on_text: Callable[[str], None] | None = None,
) -> str:
    """Concatenate streamed pieces until the stream ends, `stop_when(text)` holds or the
    deadline passes (the generator is closed, so llama.cpp stops generating)."""
    text = ""
    iterator = iter(pieces)
    try:
        for piece in iterator:
            text += piece
            if on_text is not None:
                on_text(text)
            if (stop_when is not None and stop_when(text)) or time.monotonic() > deadline:
                break
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
    return text
