"""A character's greeting and its creator's example lines as the chat model reads them: the
first few as its answers to a visitor's fixed cues, as if said before (a 135M model copies a
voice it has "spoken" better than one it was told about), the rest quoted in its card. The
world page shows the same exchange, so a creator sees what the model is shown. No heavy
imports: the web side reads this module."""

from __future__ import annotations

from collections.abc import Sequence

CUES = ("Hello.", "Tell me about yourself.", "What's on your mind?", "Go on.")
MAX_EXAMPLES = 8  # the greeting and the creator's lines a prompt holds


def default_greeting(name: str) -> str:
    return f"Hello there. I'm {name}."


def exchange(greeting: str, examples: Sequence[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """(cue, line) pairs for the greeting and the first lines, and the lines beyond the cues."""
    lines = [greeting, *examples][:MAX_EXAMPLES]
    return list(zip(CUES, lines, strict=False)), lines[len(CUES) :]
