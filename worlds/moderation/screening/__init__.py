"""One screening service for every piece of user text, before it is stored or applied.

Two layers, worst verdict wins:

1. A maintained blocklist (`blocklist.py`, `data/blocklist.txt`) matched after normalisation
   (`normalise.py`): case, accents, leetspeak ("k1ll"), spacing and punctuation tricks
   ("k i l l", "k.i.l.l"), repeated letters ("kiiiill"), and invisible characters.
2. A semantic layer (`semantic.py`): all-MiniLM-L6-v2 embeds each sentence and a softmax
   regression (`classifier.py`, `data/classifier.npz`) gives the probability of each category
   and of benign. It is trained (`training.py`) on the example sets (`data/examples*.txt`,
   benign look-alikes such as "kill the lights" included) and the tuning split, with hold and
   block thresholds from cross-validation on that training data; `manage.py screening_eval`
   (`evaluation.py`) measures it on splits it never saw.

Verdicts (`verdicts.py`): "allow", "hold" (a moderator decides; publishing puts the world in
review) and "block" (refused with a message that names the category, never the matched word).
Live text (in-world prompts, dialogue) has no one to review it in time: callers treat anything
but allow as refused (`Screening.refused_live`).

The package imports no Django so the inference worker can use it too. Code outside moderation
asks `worlds.moderation.policy`, not this package.
"""

from __future__ import annotations

from worlds.moderation.screening.blocklist import blocklist_screen
from worlds.moderation.screening.semantic import (
    SINGLE_NAME_FIELDS,
    semantic_screen_many,
    semantic_text,
)
from worlds.moderation.screening.verdicts import ALLOW, RANK, Screening

__all__ = ["Screening", "allows_live", "screen_fields", "screen_text", "screen_texts"]


def screen_text(text: str, *, field: str) -> Screening:
    """Screen one piece of user text. `field` names it in the message ("title", "event", ...)."""
    return screen_texts([text], field=field)[0]


def screen_texts(texts: list[str], *, field: str, **thresholds) -> list[Screening]:
    """Screen many texts of one kind in a single encoder batch (evaluation, bulk checks)."""
    results = [blocklist_screen(t, field=field) if t and t.strip() else ALLOW for t in texts]
    pending = [i for i, r in enumerate(results) if not r.blocked and texts[i].strip()]
    semantic_texts = [semantic_text(texts[i], field) for i in pending]
    semantic = semantic_screen_many(semantic_texts, field=field, **thresholds)
    for i, result in zip(pending, semantic, strict=True):
        if field in SINGLE_NAME_FIELDS and result.held:
            continue  # a name is too short to judge by meaning unless it is plainly bad
        if RANK[result.verdict] > RANK[results[i].verdict]:
            results[i] = result
    return results


def allows_live(text: str, *, field: str = "say") -> bool:
    """Whether live text may reach the world (a hold refuses it: no one can review it in time).
    The narrative's `screen` (a line to a character, a line it writes) in its evaluation; the
    web side passes `policy.screen_play_text`, which decides the same."""
    return not screen_text(text, field=field).refused_live


def screen_fields(fields: dict[str, str]) -> Screening:
    """Screen several fields of one object; the worst verdict wins (first field on ties)."""
    worst = ALLOW
    for field, text in fields.items():
        result = screen_text(text or "", field=field)
        if RANK[result.verdict] > RANK[worst.verdict]:
            worst = result
            if worst.blocked:
                break
    return worst
