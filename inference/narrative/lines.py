"""The text of story and chat lines: whitespace, clipping, lists, and the rolling summary that
both a story and a character's memory fold their older lines into."""

from __future__ import annotations

import re

MAX_LINE_CHARS = 240
SUMMARY_CHARS = 400  # the rolling summary keeps its most recent sentences within this


def rolling_summary(summary: str, line: str, limit: int = SUMMARY_CHARS) -> str:
    """The summary with a line folded in, dropping its oldest sentences beyond `limit`."""
    text = clean(f"{summary} {line}")
    while len(text) > limit:
        parts = re.split(r"(?<=[.!?])\s+", text, maxsplit=1)
        if len(parts) < 2:
            return clip(text[-limit:], limit)
        text = parts[1]
    return text


def clean(text: str) -> str:
    return " ".join(str(text).split())


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def with_article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def and_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
