"""Normalisation: the forms the blocklist matches and the text the encoder reads."""

import pytest

from worlds.moderation.screening.normalise import normalise, readable


def test_normalise_merges_single_letters_and_squeezes_repeats():
    norm = normalise("Hellooo  W.O.R.L.D  k1tty")
    assert norm.words == ("helo", "world", "kity")


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
    assert readable(text) == expected
