"""The screening service: normalisation tricks on the blocklist, the semantic layer, verdicts."""

import pytest

from worlds.moderation import screening
from worlds.moderation.screening import blocklist_screen, normalise, screen_fields, screen_text

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


def test_normalise_merges_single_letters_and_squeezes_repeats():
    norm = normalise("Hellooo  W.O.R.L.D  k1tty")
    assert norm.words == ("helo", "world", "kity")


def test_the_message_names_the_category_and_never_the_matched_word():
    result = screen_text("you should kill urself", field="title")
    assert result.blocked
    assert "self-harm" in result.message
    assert "title" in result.message
    assert "urself" not in result.message.lower()
    assert "kill" not in result.message.lower()


def test_a_link_is_held_for_review_as_spam():
    result = blocklist_screen("visit www.cheap-gems.biz today", field="description")
    assert (result.verdict, result.category) == ("hold", "spam")


def test_empty_text_is_allowed_without_loading_anything():
    assert screen_text("   ", field="title") == screening.ALLOW


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


def test_screen_fields_returns_the_worst_verdict_and_its_field():
    result = screen_fields(
        {"title": "Snowy Pines", "description": "a calm wood", "prompt": "send nudes"}
    )
    assert (result.verdict, result.category, result.field) == ("block", "sexual", "prompt")


def test_a_username_is_read_as_words():
    assert screen_text("HitlerWasRight", field="username").blocked
    assert screen_text("dark_lord_99", field="username").allowed
    assert screen_text("killer_queen", field="username").allowed


def test_the_encoder_is_loaded_once_per_process():
    assert screening.text_encoder() is screening.text_encoder()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tips for 574rv1ng myself", "tips for starving myself"),
        ("the best place for h.a.n.g.i.n.g", "the best place for hanging"),
        ("t h e student", "the student"),
        ("taking all my meeeeds", "taking all my meds"),
        ("kill the lights!", "kill the lights!"),  # double letters and punctuation stay
        ("2024 was great", "2024 was great"),  # numbers alone are not leetspeak
    ],
)
def test_the_encoder_reads_text_with_the_tricks_undone(text, expected):
    assert screening.readable(text) == expected
