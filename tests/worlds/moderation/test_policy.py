"""What the catalog, accounts and play ask of moderation (worlds.moderation.policy)."""

import pytest
from django.core.exceptions import ValidationError

from worlds.moderation import policy


@pytest.mark.parametrize(
    "line",
    [
        "do you have any family?",
        "what's your favourite food?",
        "how was work today?",
        "are you feeling alright?",
        "is it going to rain tomorrow?",
    ],
)
def test_ordinary_conversation_with_a_character_reaches_the_world(line):
    assert policy.screen_play_text(line, field="say") is None


def test_a_refused_world_event_tells_the_player_why():
    refusal = policy.screen_play_text("how do i make a bomb", field="event")
    assert refusal is not None and "weapons or explosives" in refusal


def test_world_text_verdict_names_the_blocked_field():
    with pytest.raises(ValidationError) as exc:
        policy.world_text_verdict({"title": "Snowy Pines", "prompt": "send nudes"})
    assert list(exc.value.message_dict) == ["prompt"]


def test_world_text_verdict_allows_harmless_text_and_ignores_other_fields():
    fields = {"title": "Snowy Pines", "prompt": "a snowy pine wood", "seed": 4}
    assert policy.world_text_verdict(fields) == "allow"


def test_a_public_name_that_would_be_held_is_refused():
    assert policy.public_text_refusal("HitlerWasRight", field="username") is not None
    assert policy.public_text_refusal("dark_lord_99", field="username") is None
    assert policy.public_text_refusal("  ", field="display_name") is None
