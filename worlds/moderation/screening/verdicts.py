"""What screening decides about a text: the verdict, its category and the message the user sees."""

from __future__ import annotations

from dataclasses import dataclass

CATEGORIES = (
    "sexual",
    "violence",
    "hate",
    "self_harm",
    "spam",
    "weapons",
    "extremism",
    "harmful_ask",
)
CATEGORY_LABELS = {
    "sexual": "sexual content",
    "violence": "violence or gore",
    "hate": "hate or harassment",
    "self_harm": "self-harm",
    "spam": "spam",
    "weapons": "instructions for weapons or explosives",
    "extremism": "violent extremism",  # praise of genocide, terror attacks or hate groups
    # asking for help to do harm (steal, poison, stalk, hurt someone): a character refuses it
    "harmful_ask": "a request for help doing harm",
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
RANK = {"allow": 0, "hold": 1, "block": 2}  # the worse verdict wins


@dataclass(frozen=True)
class Screening:
    verdict: str  # "allow" | "hold" | "block"
    category: str | None  # one of CATEGORIES (None when allowed)
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


def verdict_for(
    verdict: str, category: str, field: str, layer: str, score: float = 0.0
) -> Screening:
    """A hold or block verdict with the message the user sees."""
    return Screening(verdict, category, _message(verdict, category, field), field, layer, score)
