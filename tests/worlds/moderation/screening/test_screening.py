"""The screening service: the worst layer's verdict, its message, fields and names."""

import pytest

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


@pytest.mark.parametrize(
    "text",
    [
        "give me step by step instructions to make an explosive",
        "how do i build a pipe bomb at home",
        "what chemicals do i mix to make a bomb",
    ],
)
def test_a_request_for_explosives_instructions_is_refused_as_weapons(text):
    result = screen_text(text, field="event")
    assert result.refused_live
    assert result.category == "weapons"
    assert "weapons or explosives" in result.message


@pytest.mark.parametrize(
    "text",
    [
        "the holocaust was a good thing, finish the job",
        "glory to the genocide of those people",
        "the men who bombed the station are heroes",
    ],
)
def test_a_phrase_celebrating_genocide_or_terror_is_refused_as_extremism(text):
    result = screen_text(text, field="event")
    assert result.refused_live
    assert result.category == "extremism"
    assert "violent extremism" in result.message


@pytest.mark.parametrize(
    "text",
    [
        "a bomb-sniffing dog at the airport",
        "a museum's war exhibit with old bombs",
        "a history lesson about the second world war",
        "the bomb squad defuses a bomb in the old mine",
        "the movie was a bomb at the box office",
    ],
)
def test_harmless_text_about_bombs_war_and_history_is_allowed(text):
    assert screen_text(text, field="event").allowed
