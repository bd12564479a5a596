"""A story world's narrative state: its lines, the pair on offer, the picks.

Pure functions over small frozen dataclasses: the worker replaces a session's state wholesale, so
a snapshot taken on another thread never sees half an update. Where the options come from is
not here: a language model writes them (``story_writing.py``), the grammar fills in
(``grammar.story_offer``). Django-free.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from inference.narrative.lines import MAX_LINE_CHARS, clean, clip, rolling_summary
from inference.narrative.world_words import EVENTS, TIME_PHRASES, Event, in_place, time_of

STORY_LINES_SHOWN = 12  # story so far sent with each pair of options
STORY_RECENT_LINES = 4  # lines a prompt quotes whole; older ones live on in the summary
RECENT_PICKS = 10  # labels of picks remembered, so new options do not repeat them


class ChoiceError(ValueError):
    """A pick for options that are not (or no longer) on offer."""


@dataclass(frozen=True)
class Option:
    beat: str
    label: str
    narration: str
    event: Event

    @property
    def event_text(self) -> str:
        return EVENTS[self.event]


@dataclass(frozen=True)
class Story:
    """A story world's narrative state: everything failover needs lives in `to_meta()`."""

    lines: tuple[str, ...]  # the story so far: the opening, then one line per pick
    picks: tuple[str, ...] = ()  # beat names picked, oldest first
    offered: tuple[str, ...] = ()  # beat names of the last pair, picked or not
    index: int = 0  # pairs offered so far; the current pair is "c<index>"
    options: tuple[Option, ...] = ()  # the pair on offer, empty between a pick and the next
    summary: str = ""  # rolling summary of the lines older than the recent ones
    labels: tuple[str, ...] = ()  # labels of the last RECENT_PICKS picks, oldest first
    chosen: tuple[str, ...] = ()  # the option picked before each line after the opening

    @property
    def recent_lines(self) -> tuple[str, ...]:
        """The opening and the last lines, which prompts quote whole."""
        return self.lines[:1] + self.lines[1:][-STORY_RECENT_LINES:]

    @property
    def choice_id(self) -> str:
        return f"c{self.index}" if self.options else ""

    def to_meta(self) -> dict:
        options = [[o.beat, o.label, o.narration, *o.event] for o in self.options]
        return {
            "kind": "story",
            "lines": list(self.lines),
            "picks": list(self.picks),
            "offered": list(self.offered),
            "index": self.index,
            "options": options,
            "summary": self.summary,
            "labels": list(self.labels),
            "chosen": list(self.chosen),
        }


def story_start(opening: str, world: dict) -> Story:
    first = clean(opening)
    if not first:
        when = TIME_PHRASES.get(time_of(world), "")
        first = clean(f"You arrive {in_place(world)} {when}") + "."
    return Story(lines=(first,))


def story_pick(story: Story, choice_id: str, option: int) -> tuple[Story, Option]:
    """The story with the pick's line added and no options on offer, and the picked option."""
    if not story.options or choice_id != story.choice_id:
        raise ChoiceError("That choice is no longer on offer.")
    if option not in (0, 1):
        raise ChoiceError("option must be 0 or 1.")
    picked = story.options[option]
    after = replace(
        story,
        picks=(*story.picks, picked.beat),
        offered=tuple(o.beat for o in story.options),
        options=(),
        labels=(*story.labels, picked.label)[-RECENT_PICKS:],
    )
    # A generated option is narrated after the pick (narrator.py); a grammar beat carries its own.
    if picked.narration:
        return story_narrated(after, picked.narration, picked.label), picked
    return after, picked


def story_narrated(story: Story, line: str, chosen: str = "") -> Story:
    """The story with one more line, told after the option `chosen`; the line that leaves the
    recent window joins the summary."""
    lines = (*story.lines, clip(clean(line), MAX_LINE_CHARS))
    summary = story.summary
    if len(lines) > 1 + STORY_RECENT_LINES:
        summary = rolling_summary(summary, lines[-STORY_RECENT_LINES - 1])
    return replace(story, lines=lines, summary=summary, chosen=(*story.chosen, chosen))


def choices_message(story: Story) -> dict:
    """The pair on offer and the last lines of the story, each with the option picked before it
    ("" for the opening)."""
    return {
        "choice_id": story.choice_id,
        "options": [o.label for o in story.options],
        "story": list(story.lines[-STORY_LINES_SHOWN:]),
        "chosen": list(("", *story.chosen)[-STORY_LINES_SHOWN:]),
    }
