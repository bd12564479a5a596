"""A generated option is grounded to the engine event a pick of it should cause (MiniLM)."""

import numpy as np
import pytest

from inference.narrative import grounding
from inference.narrative.evaluate import GROUNDING, grounding_world

CLEAR_DAY = {"biome": "meadow", "weather": "clear", "time": "day", "creatures": []}


@pytest.mark.parametrize(("label", "expected"), GROUNDING, ids=[g[0] for g in GROUNDING])
def test_an_option_is_grounded_to_the_change_it_describes(label, expected):
    assert grounding.ground(label, grounding_world(expected)) == expected


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("Watch the sun rise", "dawn"),  # picked in a story, it brought dusk (December 6)
        ("See a sun rise", "dawn"),
        ("Greet the rising sun", "dawn"),
        ("Watch the sun go down", "dusk"),
        ("Watch the sun sink into the sea", "dusk"),
        ("Wait for the sun to set", "dusk"),
    ],
)
def test_the_way_the_sun_goes_decides_dawn_or_dusk(label, expected):
    assert grounding.ground(label, CLEAR_DAY) == ("time", expected)


def test_an_option_never_grounds_to_what_the_world_already_is():
    event, _ = grounding.ground_many(["Wait for the sunny sky"], CLEAR_DAY)[0]
    assert event != ("weather", "clear")
    assert not grounding.changes_nothing(event, CLEAR_DAY)


def test_a_named_creature_wins_over_a_closer_sounding_event():
    assert grounding.ground("Shelter from the rain with the deer", CLEAR_DAY) == (
        "creature",
        "deer",
    )


def test_an_option_about_nothing_the_world_knows_grounds_weakly():
    (_, weak), (_, strong) = grounding.ground_many(
        ["Ask the innkeeper about taxes", "Follow the fox into the bushes"], CLEAR_DAY
    )
    assert weak < strong


# A creature's name in another sense names no creature, and as the animal it does: the world's
# own reader decides (it was a word pattern per creature, and a rule for "bear"). Written for
# this test; the reader's training texts hold other sentences of the kind.
OTHER_SENSES = [
    "Bear the cold until dawn",
    "Wolf down the stew before leaving",
    "Duck behind the wall",
    "Don't crab about the weather",
    "Fish for the key in the well",
    "Ghost through the hall unseen",
    "Rabbit on about the old days",
    "Can't bear the noise any longer",
]
THE_ANIMAL = [
    ("Follow the fox into the bushes", "fox"),
    ("Share your bread with the bear", "bear"),
    ("Watch the fish in the stream", "fish"),
    ("Feed the stray cat", "cat"),
    ("Chase the rabbit across the field", "rabbit"),
    ("Listen to the wolves howl", "wolf"),
    ("Catch a butterfly", "butterfly"),
    ("A bear lumbers out of the trees", "bear"),
]


def test_a_creature_is_named_by_the_animal():
    animals = [grounding.creatures_named(text) == [c] for text, c in THE_ANIMAL]
    assert np.mean(animals) >= 0.85, [
        t for (t, _), ok in zip(THE_ANIMAL, animals, strict=True) if not ok
    ]


def test_a_creature_name_in_another_sense_names_no_creature():
    senses = [not grounding.creatures_named(text) for text in OTHER_SENSES]
    assert np.mean(senses) >= 0.6, [t for t, ok in zip(OTHER_SENSES, senses, strict=True) if not ok]
