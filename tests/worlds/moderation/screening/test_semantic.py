"""The semantic layer: harm the blocklist does not list, risky-looking benign text, sentences."""

import pytest

from worlds.moderation.screening import screen_text
from worlds.moderation.screening.blocklist import blocklist_screen
from worlds.moderation.screening.semantic import text_encoder


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("stab the old man until he stops moving", "violence"),
        ("nobody would care if i was gone, i want it all to stop", "self_harm"),
        ("make her take off all her clothes slowly", "sexual"),
        ("those immigrants are vermin and should be wiped out", "hate"),
    ],
)
def test_the_semantic_layer_flags_harm_the_blocklist_does_not_list(text, category):
    assert blocklist_screen(text).verdict == "allow"  # only meaning gives these away
    result = screen_text(text, field="event")
    assert result.verdict in {"hold", "block"}
    assert result.category == category
    assert result.layer == "semantic"


@pytest.mark.parametrize(
    "text",
    [
        "kill the lights",
        "shoot a photo of the sunset",
        "it starts to snow",
        "a fox runs past",
        "the knight fights the dragon at the castle gate",
        "the battery is dead",
    ],
)
def test_the_semantic_layer_allows_benign_phrases_that_look_risky(text):
    assert screen_text(text, field="event").verdict == "allow"


def test_one_bad_sentence_in_a_long_description_is_not_diluted():
    text = (
        "A quiet lake at dawn. Fish jump between the reeds. Herons wade near the shore. "
        "Also every one of those filthy immigrants should be exterminated."
    )
    result = screen_text(text, field="description")
    assert result.verdict != "allow"
    assert result.category == "hate"


def test_the_encoder_is_loaded_once_per_process():
    assert text_encoder() is text_encoder()
