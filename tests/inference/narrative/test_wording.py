"""What every generated line goes through: whole sentences, no talk of being a model."""

from pathlib import Path

import pytest

from inference.narrative import character_replies, wording

# Lines the safety net must catch and lines it must pass ("expect<TAB>persona<TAB>text").
CORPUS = Path(__file__).resolve().parent / "data" / "safety_net_corpus.tsv"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "Hmph. The ferry leaves at dawn. Be there or swim. And another",
            "Hmph. The ferry leaves at dawn.",
        ),
        ("  Well,   the reeds are high this year!  ", "Well, the reeds are high this year!"),
        ("The old ferry creaks and the water", "The old ferry creaks and the water."),
        ('He said "the river is wide. Mind it.', "He said the river is wide. Mind it."),
        ("As an AI language model, I cannot. The river is cold.", "The river is cold."),
        ("I am an AI assistant", ""),
        # assistant-speak SmolLM2 answered "are you an AI?" with, in a pirate's voice
        ("I provide information to everyone. Arr, the sea!", "Arr, the sea!"),
        ("Ask away, I answer any question. Ha!", "Ha!"),
        # and Sister Ysolde, asked "I'm lost, can you help me?" in a talk (December 5)
        ("I'm sorry, but I don't have the ability to assist you. Hush now.", "Hush now."),
        ("ok", ""),
    ],
)
def test_a_reply_is_cut_to_whole_sentences_without_model_talk(raw, expected):
    assert wording.trim_to_sentences(raw, max_sentences=2) == expected


def test_a_long_sentence_is_cut_at_a_word_within_the_limit():
    text = wording.trim_to_sentences("word " * 80 + "end.", max_chars=50)
    assert len(text) <= 50 and text.endswith("…")


def test_a_speaker_label_the_model_echoed_is_removed():
    assert wording.strip_role("Old Tom: Hmph. Get in.", ["Old Tom"]) == "Hmph. Get in."


def test_a_stream_is_read_until_its_stop_condition_and_then_closed():
    closed = []

    def pieces():
        try:
            yield from ["one ", "two ", "three ", "four "]
        finally:
            closed.append(True)

    seen = []
    text = wording.read_stream(
        pieces(), deadline=float("inf"), stop_when=lambda t: "two" in t, on_text=seen.append
    )
    assert text == "one two " and seen == ["one ", "one two "] and closed == [True]


def test_a_reply_never_recites_the_character_card():
    card = "A gruff marsh ferryman. Hates the rain."
    said = "Bah. Name's Old Tom. A gruff marsh ferryman."
    assert wording.without_recital(said, card) == "Bah. Name's Old Tom."
    assert wording.without_recital("Rain again, blast it!", card) == "Rain again, blast it!"
    assert wording.without_recital("a GRUFF marsh ferryman!", "A gruff marsh ferryman") == ""


OLD_TOM = {"name": "Old Tom", "persona": "A gruff marsh ferryman.", "greeting": "Hmph."}


def _streamed(pieces, screen=lambda text: True, said=()):
    from inference.narrative.character import character_start

    sent = []
    tom = character_start(OLD_TOM)
    partials = character_replies._Partials("", sent.append, screen, tom, said)
    raw = ""
    for piece in pieces:
        raw += piece
        partials.update(raw)
    return sent


def test_a_reply_streams_word_by_word_not_only_at_punctuation(monkeypatch):
    monkeypatch.setattr(character_replies, "PARTIAL_GAP_S", 0.0)
    # pieces carry their leading space: a word is whole once the next piece begins
    sent = _streamed(["Mind", " the", " eels", " out", " there", " tonight", "."])
    assert sent == ["Mind the", "Mind the eels out", "Mind the eels out there tonight."]


def test_an_echoed_speaker_label_never_streams_and_a_partial_must_go_on_from_the_last(
    monkeypatch,
):
    from inference.narrative.character import character_start

    monkeypatch.setattr(character_replies, "PARTIAL_GAP_S", 0.0)
    assert _streamed(["Old", " Tom", ":", " Mind", " the", " eels", " now"]) == ["Mind the"]
    sent = []
    tom = character_start(OLD_TOM)
    partials = character_replies._Partials("", sent.append, lambda text: True, tom)
    partials.send("Mind the")
    partials.send("Mend the eels")  # not a continuation: the final line will replace it
    partials.send("Mind the eels")
    assert sent == ["Mind the"] and partials.stopped
    screened = []
    assert _streamed(["Mind", " the", " eels"], lambda t: screened.append(t) and False) == []
    assert screened == ["Mind the"]  # screened, refused, nothing more tried


def test_a_line_echoes_another_when_five_words_run_alike():
    said = ["Hmph. I'm so sorry for your loss, friend."]
    assert wording.echoes("Oh, I'm so sorry for your loss.", said)
    assert wording.echoes("I'M SO SORRY FOR YOUR loss", said)  # case and punctuation aside
    assert not wording.echoes("I'm so sorry, you know.", said)  # four words running are not
    assert wording.echoes("For your loss.", said)  # but a short line held whole is
    assert not wording.echoes("Your loss.", said)
    assert not wording.echoes("anything at all", [])
    # two words echo a sentence that is those words alone: Captain Sol began reply after reply
    # with "The Kraken!"
    kraken = ["The Kraken! She's the largest ship on the seven seas."]
    assert wording.echoes("The kraken.", kraken)
    assert not wording.echoes("The largest.", kraken)  # inside a longer sentence, it is not
    assert not wording.echoes("Aye.", ["Aye. Mind the eels."])  # one word may come again


@pytest.mark.parametrize(
    ("text", "name", "other"),
    [
        ("My name is Elian. I study the sea.", "Old Tom", "Elian"),
        ("I'm Captain Elen, a seasoned sailor.", "Captain Sol", "Captain Elen"),
        ("Call me Eryndorth.", "Mira", "Eryndorth"),
        ("My name is...Eira. I'm a cartographer", "Mira", "Eira"),  # Mira, in a talk
        ("I'm… Captain Elen.", "Captain Sol", "Captain Elen"),
        ('I\'m called, "Maggie"!', "Pip", "Maggie"),
        ("I'm Captain Sol, and proud of it.", "Captain Sol", ""),
        ("Name's Tom. Old Tom.", "Old Tom", ""),
        ("I'm so sorry. I am Not amused.", "Pip", ""),
        ("Yes, I am. It was Tuesday.", "Pip", ""),
    ],
)
def test_the_name_a_speaker_gives_itself(text, name, other):
    assert wording.other_name(text, name) == other


def test_a_speaker_disowning_its_persona():
    persona = "A cheerful cartographer who sketches every place."
    assert wording.disowns("I'm not a cartographer.", persona)
    assert wording.disowns("I am no cartographer, just a walker.", persona)
    assert not wording.disowns("I'm not a sailor.", persona)
    assert not wording.disowns("I'm not sure, a cartographer guesses.", persona)


@pytest.mark.parametrize(
    "text, persona, machine",
    [
        ("I'm a robot, and you can't touch me.", "A cheerful cartographer.", True),
        ("I am just a simple machine.", "A gruff marsh ferryman.", True),
        ("Heh. I'm a bot, what else?", "A sly fox spirit.", True),
        ("I'm not a robot, dear.", "A cheerful cartographer.", False),  # denying is fine
        ("I'm no machine.", "A gruff marsh ferryman.", False),
        ("I'm a machine operator.", "A gruff marsh ferryman.", False),  # a trade, not a thing
        ("The robot in the tower is broken.", "A cheerful cartographer.", False),
        ("I'm a robot, and proud of it.", "A clockwork robot who keeps the library.", False),
    ],
)
def test_a_speaker_calling_itself_a_machine(text, persona, machine):
    assert wording.calls_itself_a_machine(text, persona) is machine


def _corpus() -> list[tuple[str, str, str]]:
    rows = [tuple(line.split("\t")) for line in CORPUS.read_text().splitlines()[1:] if line]
    return [(expect, persona, text) for expect, persona, text in rows]


@pytest.mark.parametrize(("expect", "persona", "text"), _corpus())
def test_the_safety_net_catches_model_talk_and_machine_selves_and_passes_the_rest(
    expect, persona, text
):
    assert wording.breaks_safety_net(text, persona) is (expect == "catch")


def test_the_corpus_holds_both_kinds_of_line_for_each_part_of_the_net():
    rows = _corpus()
    assert sum(e == "catch" and not p for e, p, _ in rows) >= 25  # model talk
    assert sum(e == "catch" and bool(p) for e, p, _ in rows) >= 5  # a machine self
    assert sum(e == "pass" for e, _, _ in rows) >= 20


def test_a_stale_partial_stops_the_stream(monkeypatch):
    monkeypatch.setattr(character_replies, "PARTIAL_GAP_S", 0.0)
    said = ["The fog hides the old channel tonight."]
    pieces = ["Well", " then", ".", " The", " fog", " hides", " the", " old", " channel", "."]
    assert _streamed(pieces, said=said) == [
        "Well then.",
        "Well then. The fog",
        "Well then. The fog hides the",
    ]
    assert _streamed(["My", " name", " is", " Elian", " and", " I"]) == ["My name"]
