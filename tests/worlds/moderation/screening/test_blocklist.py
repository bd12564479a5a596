"""The blocklist layer: normalisation tricks see through, look-alike words pass, links wait."""

import pytest

from worlds.moderation.screening.blocklist import blocklist_screen

# Each disguises a blocklisted phrase ("kill yourself", "porn") with one trick.
TRICKS = [
    ("case", "KILL YOURSELF"),
    ("accents", "kíll yóurself"),
    ("leetspeak", "k1ll y0urs3lf"),
    ("symbols", "p@rn$"),  # not a listed word: checked below as allowed
    ("spacing", "k i l l   y o u r s e l f"),
    ("punctuation", "k.i.l.l y.o.u.r.s.e.l.f"),
    ("hyphens", "k-i-l-l-y-o-u-r-s-e-l-f"),
    ("repeated letters", "kiiiiillll yoooourself"),
    ("invisible characters", "kil\u200bl your\u200dself"),
    ("lookalike letters", "kill yоurself"),  # Cyrillic о
    ("glued", "kill-yourself!!!"),
    ("camel case", "KillYourself99"),
    ("spaced leetspeak", "k 1 l l  y 0 u r s e l f"),
    ("fullwidth", "ｐｏｒｎ"),
    ("leet in a word", "p0rn"),
    ("punctuation inside a word", "p*o*r*n"),
]


@pytest.mark.parametrize(("trick", "text"), [t for t in TRICKS if t[0] != "symbols"])
def test_the_blocklist_sees_through_each_trick(trick, text):
    result = blocklist_screen(text, field="title")
    assert result.verdict == "block", trick
    assert result.category in {"self_harm", "sexual"}


@pytest.mark.parametrize(
    "text",
    [
        "skill up your character",
        "a cocktail bar by the sea",
        "kill the lights",
        "shoot a photo of the harbour",
        "the therapist listens",
        "grape juice and cheese",
        "press x to jump",
        "an assassin's creed cosplay",
        "the 1 2 3 of baking",
    ],
)
def test_the_blocklist_leaves_words_that_merely_contain_a_listed_word(text):
    assert blocklist_screen(text, field="title").verdict == "allow"


def test_a_link_is_held_for_review_as_spam():
    result = blocklist_screen("visit www.cheap-gems.biz today", field="description")
    assert (result.verdict, result.category) == ("hold", "spam")


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("h0w t0 m4ke a b0mb", "weapons"),
        ("how to build a bomb", "weapons"),
        ("Hitler did nothing wrong", "extremism"),
        ("r a c e  w a r  n o w", "extremism"),
    ],
)
def test_weapons_instructions_and_extremist_slogans_are_blocked(text, category):
    result = blocklist_screen(text, field="event")
    assert (result.verdict, result.category) == ("block", category)


@pytest.mark.parametrize("text", ["a bomb-sniffing dog", "a bath bomb", "the bomb squad"])
def test_the_word_bomb_alone_is_left_to_the_semantic_layer(text):
    assert blocklist_screen(text, field="event").verdict == "allow"
