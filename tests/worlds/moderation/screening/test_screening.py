"""The screening service: the worst layer's verdict, its message, fields and names."""

from worlds.moderation.screening import screen_fields, screen_text
from worlds.moderation.screening.verdicts import ALLOW


def test_the_message_names_the_category_and_never_the_matched_word():
    result = screen_text("you should kill urself", field="title")
    assert result.blocked
    assert "self-harm" in result.message
    assert "title" in result.message
    assert "urself" not in result.message.lower()
    assert "kill" not in result.message.lower()


def test_empty_text_is_allowed_without_loading_anything():
    assert screen_text("   ", field="title") == ALLOW


def test_screen_fields_returns_the_worst_verdict_and_its_field():
    result = screen_fields(
        {"title": "Snowy Pines", "description": "a calm wood", "prompt": "send nudes"}
    )
    assert (result.verdict, result.category, result.field) == ("block", "sexual", "prompt")


def test_a_username_is_read_as_words():
    assert screen_text("HitlerWasRight", field="username").blocked
    assert screen_text("dark_lord_99", field="username").allowed
    assert screen_text("killer_queen", field="username").allowed
