"""The open vocabulary: every concrete thing the world model can draw, read from a data file.

`weights/concepts.json` (written by `training.icons` from labelled icon sets) holds each
concept's name, aliases and tags, the labels its behaviour head learned from and its split
("unseen": never trained on, kept to measure). The names live here, not in the weights, so a
synonym is a line of data. Nothing here draws: sprites and behaviours come from the networks
in `world.sprites`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CONCEPTS_PATH = Path(__file__).resolve().parents[1] / "weights" / "concepts.json"
# What a concept does once it is in the world (the behaviour head's classes).
BEHAVIOURS = ("wanders", "flies", "swims", "blocks", "walkable")
MOVING = frozenset({"wanders", "flies", "swims"})


@dataclass(frozen=True)
class Concept:
    index: int
    name: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    source: str  # "emoji" or "game-icons"
    group: str  # the icon set's category ("animal-bird"), "silhouette" for game icons
    motion: str | None  # the label the behaviour head trained on (None: unlabelled)
    light: bool
    split: str  # "train" or "unseen"

    @property
    def names(self) -> tuple[str, ...]:
        """What people call it: its name first, then its aliases."""
        return (self.name, *self.aliases)


@cache
def load(path: Path = CONCEPTS_PATH) -> tuple[Concept, ...]:
    rows = json.loads(path.read_text())["concepts"]
    return tuple(
        Concept(
            index=i,
            name=r["name"],
            aliases=tuple(r.get("aliases", ())),
            tags=tuple(r.get("tags", ())),
            source=r["source"],
            group=r["group"],
            motion=r.get("motion"),
            light=bool(r.get("light")),
            split=r["split"],
        )
        for i, r in enumerate(rows)
    )


def by_name() -> dict[str, Concept]:
    return {c.name: c for c in load()}
