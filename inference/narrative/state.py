"""A world's narrative state as a whole: the one its category begins with, and the one its
snapshot holds (``to_meta`` of a Story or a Character, read back by ``from_meta``). Django-free.
"""

from __future__ import annotations

from inference.narrative.character import Character, character_start
from inference.narrative.story import Option, Story, story_start
from inference.narrative.world_words import EVENTS

# Snapshots written before v2 name things "feature"s.
LEGACY_KINDS = {"feature": "thing"}


def begin(
    category: str, world: dict, *, opening: str = "", character: dict | None = None
) -> Story | Character | None:
    """The narrative a new world of this category starts with (None: it has none)."""
    if category == "stories":
        return story_start(opening, world)
    if category == "characters":
        return character_start(character if isinstance(character, dict) else {})
    return None


def _chosen(meta: dict) -> tuple[str, ...]:
    """The picks before the lines after the opening; a snapshot from before they were kept has
    none, and its older lines get "" (nobody knows what was picked)."""
    after_opening = max(0, len(meta["lines"]) - 1)
    chosen = (
        tuple(str(c) for c in meta.get("chosen") or [])[-after_opening:] if after_opening else ()
    )
    return ("",) * (after_opening - len(chosen)) + chosen


def from_meta(meta: object) -> Story | Character | None:
    """Rebuild a state from `to_meta()`; anything unreadable gives None (the world still plays)."""
    if not isinstance(meta, dict):
        return None
    try:
        if meta.get("kind") == "story":
            options = tuple(
                Option(
                    beat=o[0],
                    label=o[1],
                    narration=o[2],
                    event=(LEGACY_KINDS.get(o[3], o[3]), o[4]),
                )
                for o in meta.get("options") or []
            )
            if any(o.event not in EVENTS for o in options):
                options = ()
            return Story(
                lines=tuple(str(line) for line in meta["lines"]) or ("",),
                picks=tuple(str(p) for p in meta.get("picks") or []),
                offered=tuple(str(p) for p in meta.get("offered") or []),
                index=int(meta.get("index") or 0),
                options=options,
                summary=str(meta.get("summary") or ""),
                labels=tuple(str(label) for label in meta.get("labels") or []),
                chosen=_chosen(meta),
            )
        if meta.get("kind") == "character":
            return Character(
                name=str(meta["name"]),
                persona=str(meta.get("persona") or ""),
                greeting=str(meta.get("greeting") or ""),
                turn=int(meta.get("turn") or 0),
                greeted=bool(meta.get("greeted")),
                last_intent=str(meta.get("last_intent") or ""),
                examples=tuple(str(e) for e in meta.get("examples") or []),
                memory=tuple((str(a), str(b)) for a, b in meta.get("memory") or []),
                summary=str(meta.get("summary") or ""),
                world=str(meta.get("world") or ""),
            )
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return None
