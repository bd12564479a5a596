"""Continuous batching (decoding.py): streams from several threads on one decode loop, per
sequence prefix reuse, sampling and stop strings, failures kept to their own stream. The model
tests use the real embedded models (lm_support.py); the rest is numpy and text."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from inference.narrative.backends import embedded
from inference.narrative.decoding import (
    SPLIT_MAX,
    BatchDecoder,
    Request,
    Slot,
    Status,
    split_outputs_for,
)
from inference.narrative.lm import LMError, Sampling
from inference.narrative.sampler import run_bans, sample
from inference.narrative.stream_text import StreamText

GREEDY = Sampling(max_tokens=8, temperature=0.0, repeat_penalty=1.0, seed=1)
SERIES = {  # a prompt, and the word its continuation must hold
    "Monday, Tuesday, Wednesday, Thursday,": "Friday",
    "January, February, March, April,": "May",
    "one, two, three, four,": "five",
    "red, orange, yellow, green,": "blue",
    "Mercury, Venus, Earth,": "Mars",
    "spring, summer, autumn,": "winter",
}


def complete_all(lm, prompts, sampling=GREEDY):
    """Each prompt completed on a thread of its own, all at once: -> {prompt: text or error}."""
    start = threading.Barrier(len(prompts))

    def one(prompt):
        start.wait(30)
        try:
            return "".join(lm.complete(prompt, sampling))
        except LMError as exc:
            return exc

    with ThreadPoolExecutor(len(prompts)) as pool:
        return dict(zip(prompts, pool.map(one, prompts), strict=True))


def _slot(seq_id: int, status: Status, pending: int, used_at: int) -> Slot:
    request = Request("", GREEDY, status=status, pending=list(range(100, 100 + pending)))
    return Slot(seq_id, request=request, used_at=used_at)


def test_a_step_reads_prompt_chunks_of_one_length_after_a_token_for_every_stream():
    decoding = [_slot(i, Status.DECODE, 1, i) for i in range(6)]
    reading = [_slot(6, Status.PREFILL, 300, 7), _slot(7, Status.PREFILL, 40, 8)]
    plan = BatchDecoder._plan(SimpleNamespace(slots=[*reading, *decoding], step_tokens=256))
    assert [(s.seq_id, len(t), out) for s, t, out in plan[:6]] == [(i, 1, True) for i in range(6)]
    # the oldest read first; both chunks the shorter's length, so it samples and one pass holds both
    assert [(s.seq_id, len(t), out) for s, t, out in plan[6:]] == [(6, 40, False), (7, 40, True)]
    alone = BatchDecoder._plan(SimpleNamespace(slots=[reading[0]], step_tokens=256))
    assert [(len(t), out) for _, t, out in alone] == [(256, False)]  # the room, then the rest


def test_the_room_is_shared_out_when_the_reads_are_long():
    reading = [_slot(i, Status.PREFILL, 500, i) for i in range(3)]
    plan = BatchDecoder._plan(SimpleNamespace(slots=reading, step_tokens=64))
    assert [len(t) for _, t, _ in plan] == [21, 21, 21]


def test_a_step_is_split_into_calls_of_one_output_only_where_that_was_faster():
    assert split_outputs_for([0.025, 0.026, 0.030], [0.045, 0.044, 0.020]) == SPLIT_MAX  # EPYC
    assert split_outputs_for([0.122, 0.118, 0.121], [0.059, 0.060, 0.061]) == 1  # Xeon
    shipped = SimpleNamespace(split_outputs=SPLIT_MAX)
    plan = [(Slot(i), [1], True) for i in range(3)] + [(Slot(3), [1, 2], False)]
    assert [len(c) for c in BatchDecoder._calls(shipped, plan)] == [2, 1, 1]  # the read rides along
    assert [len(c) for c in BatchDecoder._calls(SimpleNamespace(split_outputs=1), plan)] == [4]


# --- on the real model --------------------------------------------------------------------


def test_a_new_decoder_of_a_shipped_file_measures_the_split_and_leaves_its_sequences_empty(
    smollm2,
):
    import llama_cpp

    shipped = embedded("smollm2", weights="shipped")  # the 4-bit file as packaged
    shipped.load()
    decoder = BatchDecoder(shipped.decoder._model, sequences=2, n_ctx_seq=128, name="measured")
    try:
        assert decoder.split_outputs in (1, SPLIT_MAX)  # measured when it started
        for seq in (0, 1):
            assert llama_cpp.llama_memory_seq_pos_max(decoder._memory, seq) == -1
        assert "Friday" in "".join(decoder.generate(next(iter(SERIES)), GREEDY))
    finally:
        decoder.close()


def test_streams_from_several_threads_each_get_their_own_whole_completion(gemma):
    steps = gemma.decoder.steps
    texts = complete_all(gemma, list(SERIES))
    for prompt, word in SERIES.items():
        assert word in texts[prompt], (prompt, texts[prompt])
        others = [w for w in SERIES.values() if w != word]
        assert not any(w in texts[prompt] for w in others), texts[prompt]
    # Batched: far fewer decode steps than 6 streams of 8 tokens one after another would take.
    assert gemma.decoder.steps - steps < len(SERIES) * GREEDY.max_tokens


def test_attention_without_flash_attention_completes_every_stream_as_with_it(smollm2):
    # SmolLM2 may run without it (backends.FLASH_ATTENTION, timed at load): the plain products
    # must read each sequence's own cells as flash attention does, several streams at once
    texts = {}
    for flash in (True, False):
        decoder = BatchDecoder(
            smollm2.decoder._model, sequences=4, n_ctx_seq=128, split_outputs=1,
            flash_attention=flash, name=f"flash-{flash}",
        )  # fmt: skip
        try:
            texts[flash] = complete_all(SimpleNamespace(complete=decoder.generate), list(SERIES))
        finally:
            decoder.close()
    for prompt in SERIES:  # later tokens may part over rounding, not the next one
        assert texts[False][prompt].split()[0] == texts[True][prompt].split()[0], texts
    assert "Friday" in texts[False]["Monday, Tuesday, Wednesday, Thursday,"]


def test_a_second_turn_evaluates_only_what_is_new_even_after_other_prompts(smollm2):
    decoder = smollm2.decoder
    turn = [
        {
            "role": "system",
            "content": "You are Quillon Vantablack, a lighthouse keeper who "
            "counts ships and distrusts gulls.",
        },  # fmt: skip
        {"role": "user", "content": "Good evening. How was the sea today?"},
    ]
    before = decoder.evaluated
    reply = "".join(smollm2.chat(turn, GREEDY))
    first = decoder.evaluated - before
    complete_all(smollm2, ["Another player says hello.", "A third one asks the way."])
    turn += [{"role": "assistant", "content": reply}, {"role": "user", "content": "And gulls?"}]
    before, reused = decoder.evaluated, decoder.reused
    assert "".join(smollm2.chat(turn, GREEDY)).strip()
    second = decoder.evaluated - before
    assert 0 < second < first  # the new turn only, not the card and the first turn again
    assert decoder.reused - reused >= first - 2
    stats = decoder.finished[-1]  # what the bench reads: this request's own account
    assert (stats.evaluated, stats.reused) == (second, decoder.reused - reused)
    assert stats.prompt == stats.evaluated + stats.reused
    assert 0 < stats.generated <= GREEDY.max_tokens
    assert stats.prefill_s > 0 and stats.decode_s >= 0 and stats.waited_s >= 0


def test_a_prompt_another_sequence_holds_most_of_is_copied_from_it_not_read_again(gemma):
    # Every story prompt opens with the same examples; with more prompts than sequences, a
    # prompt rarely finds its own, and at 8 sessions each read ~140 of its ~240 tokens again.
    decoder = gemma.decoder
    examples = "".join(
        f"Example {i}: the ferry crosses the grey river at dawn.\n" for i in range(8)
    )
    days = examples + "Monday, Tuesday, Wednesday, Thursday,"
    assert "Friday" in "".join(gemma.complete(days, GREEDY))
    holder = gemma.decoder.finished[-1].seq_id
    copied = decoder.copied
    # The sequence holding the examples stays busy while the other prompt comes.
    busy = threading.Thread(
        target=lambda: "".join(gemma.complete(days + " Friday,", replace(GREEDY, max_tokens=64)))
    )
    busy.start()
    deadline = time.monotonic() + 30
    while decoder.slots[holder].request is None and time.monotonic() < deadline:
        time.sleep(0.005)
    months = examples + "January, February, March, April,"
    assert "May" in "".join(gemma.complete(months, GREEDY))  # as when read whole
    busy.join(60)
    stats = next(s for s in reversed(decoder.finished) if s.seq_id != holder)
    shared = len(gemma.decoder._model.tokenize(examples.encode(), True, True))
    assert stats.reused >= shared - 2 and stats.evaluated < 16
    assert decoder.copied - copied == stats.reused


def test_two_prompts_with_a_card_in_common_keep_a_sequence_each(smollm2):
    decoder = smollm2.decoder
    card = "You are Marigold, the cheerful village baker, who loves cinnamon and gossip. "
    worlds = [
        "Where you are: a snowy mountain pass at night, wolves howling far below the road. ",
        "Where you are: a sunny beach at noon, gulls over the water and crabs in the sand. ",
    ]
    turns = ["The traveller says: hello.", "The traveller says: what do you sell?"]
    costs = []
    for turn in range(2):
        for world in worlds:  # the two players speak in turn, as the runner serves them
            before = decoder.evaluated
            prompt = card + world + " ".join(turns[: turn + 1]) + " Marigold says:"
            list(smollm2.complete(prompt, GREEDY))
            costs.append(decoder.evaluated - before)
    first_turns, second_turns = costs[:2], costs[2:]
    # Each second turn goes on from its own first: neither took the other's sequence.
    assert all(second < first / 2 for first, second in zip(first_turns, second_turns, strict=True))


def test_a_conversation_whose_memory_folded_goes_on_in_its_own_sequence(smollm2):
    # After a fold (character.character_remember) a prompt shares only its card with its own
    # sequence, as it does with another player's of the same character: the turns the fold
    # kept tell them apart.
    card = ("Marigold is the cheerful village baker, who loves cinnamon, gossip and "
            "everyone's business. She answers in one short sentence.\n")  # fmt: skip
    cakes = [f"Traveller: tell me about cake number {i}.\nMarigold: Cake {i} has {i} cherries "
             "on top.\n" for i in range(12)]  # fmt: skip
    rain = [f"Traveller: what is the weather on day {i}?\nMarigold: On day {i} it rains.\n"
            for i in range(6)]  # fmt: skip
    ask = "Traveller: and then?\nMarigold:"

    def run(prompt):
        "".join(smollm2.complete(prompt, GREEDY))
        return smollm2.decoder.finished[-1]

    first = run(card + "".join(cakes) + ask)
    other = run(card + "".join(rain) + ask)
    assert other.seq_id != first.seq_id  # a card in common is not enough to take a sequence
    folded = run(card + "Earlier: they talked about cakes.\n" + "".join(cakes[6:]) + ask)
    assert folded.seq_id == first.seq_id and folded.reused >= 16
    again = run(card + "".join(rain) + "Traveller: and tomorrow?\nMarigold:")
    assert again.seq_id == other.seq_id  # the other conversation kept its own


def test_stop_strings_and_max_tokens_hold_per_sequence(gemma):
    days = "Monday, Tuesday, Wednesday, Thursday,"
    long = Sampling(max_tokens=12, temperature=0.0, repeat_penalty=1.0)
    cases = {
        "stop": (days, Sampling(**{**long.__dict__, "stop": ("Friday",)})),
        "short": (days, Sampling(**{**long.__dict__, "max_tokens": 3})),
        "long": (days, long),
    }

    def one(case):
        prompt, sampling = cases[case]
        return case, "".join(gemma.complete(prompt, sampling))

    with ThreadPoolExecutor(3) as pool:
        texts = dict(pool.map(one, cases))
    assert "Friday" in texts["long"]
    assert "Friday" not in texts["stop"]
    assert texts["long"].startswith(texts["stop"])  # cut where the stop string began
    assert texts["long"].startswith(texts["short"]) and len(texts["short"]) < len(texts["long"])


def test_a_prompt_that_fails_fails_alone(gemma):
    too_long = "word " * 2000  # more tokens than a sequence holds
    prompts = [too_long, *list(SERIES)[:3]]
    texts = complete_all(gemma, prompts)
    assert isinstance(texts[too_long], LMError)
    for prompt in prompts[1:]:
        assert SERIES[prompt] in texts[prompt]


def test_a_reader_that_stops_early_frees_its_sequence_for_the_others(smollm2):
    endless = Sampling(max_tokens=200, temperature=0.8, seed=3)
    streams = [smollm2.complete(f"Story number {i}: once upon a time", endless) for i in range(8)]
    for stream in streams:
        next(stream)
        stream.close()  # as read_stream does at a deadline
    # Every sequence was taken by an abandoned stream; new ones still get seats and finish.
    texts = complete_all(smollm2, list(SERIES)[:2])
    assert all(isinstance(text, str) and text.strip() for text in texts.values())


def test_an_output_never_repeats_four_tokens_running_of_the_lines_it_must_avoid(gemma):
    # The series the model would go on with, greedily, is one it was told not to repeat.
    prompt = "Monday, Tuesday, Wednesday, Thursday,"
    plain = "".join(gemma.complete(prompt, GREEDY))
    assert "Friday, Saturday" in plain
    avoid = "Friday, Saturday, Sunday, Monday"
    told = "".join(gemma.complete(prompt, replace(GREEDY, avoid=(avoid,))))
    tokens = gemma.decoder._model.tokenize(told.encode(), False, False)
    said = gemma.decoder._model.tokenize(f" {avoid}".encode(), False, False)
    runs = {tuple(said[i : i + 4]) for i in range(len(said) - 3)}
    assert told.strip() and not any(tuple(tokens[i : i + 4]) in runs for i in range(len(tokens)))


def test_the_decoder_counts_the_requests_on_it(smollm2):
    endless = Sampling(max_tokens=200, temperature=0.8, seed=3)
    stream = smollm2.complete("Once upon a time, far away,", endless)
    next(stream)
    assert smollm2.in_flight() >= 1
    stream.close()  # freed at the decoder's next step
    deadline = time.monotonic() + 10
    while smollm2.in_flight() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert smollm2.in_flight() == 0


# --- sampling and text, without a model ---------------------------------------------------


def test_temperature_zero_takes_the_most_likely_token():
    logits = np.array([0.1, 2.0, 1.5, -1.0], dtype=np.float32)
    rng = np.random.default_rng(0)
    assert sample(logits, [], Sampling(temperature=0.0, repeat_penalty=1.0), rng) == 1


def test_the_repetition_penalty_turns_away_from_a_token_just_generated():
    logits = np.array([0.0, 2.0, 1.9, 0.0], dtype=np.float32)
    greedy = Sampling(temperature=0.0, repeat_penalty=1.25)
    rng = np.random.default_rng(0)
    assert sample(logits, [1], greedy, rng) == 2
    assert logits[1] == pytest.approx(2.0)  # the model's own buffer is left alone


def test_a_banned_token_is_never_taken_and_bans_follow_runs_of_the_lines():
    logits = np.array([0.0, 2.0, 1.9, 0.0], dtype=np.float32)
    rng = np.random.default_rng(0)
    assert sample(logits, [], Sampling(temperature=0.0), rng, banned=[1]) == 2
    assert {sample(logits, [], Sampling(temperature=2.0), rng, banned=[1]) for _ in range(50)} <= {
        0,
        2,
        3,
    }
    bans = run_bans([[5, 6, 7, 8, 9], [5, 6, 7, 4]], run=4)
    assert bans == {(5, 6, 7): [4, 8], (6, 7, 8): [9]}
    assert run_bans([[1, 2, 3]], run=4) == {}  # a line shorter than a run bans nothing


def test_top_p_and_min_p_keep_unlikely_tokens_out():
    logits = np.array([5.0, 4.9, -3.0, -3.0, -3.0], dtype=np.float32)
    rng = np.random.default_rng(0)
    picked = {sample(logits, [], Sampling(temperature=1.5, top_p=0.9), rng) for _ in range(200)}
    assert picked == {0, 1}


def test_a_seed_makes_sampling_repeatable():
    logits = np.random.default_rng(1).normal(size=1000).astype(np.float32)
    s = Sampling(temperature=1.0, top_p=1.0)

    def draws(seed):
        rng = np.random.default_rng(seed)
        return [sample(logits, [], s, rng) for _ in range(20)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)


def test_text_that_may_begin_a_stop_string_waits_until_it_cannot():
    text = StreamText(("\n\n", "Traveller:"))
    assert text.add(b"Hello there") == "Hello there"
    assert text.add(b". Trav") == ". "  # "Trav" may begin "Traveller:"
    assert text.add(b"el far.") == "Travel far."
    assert text.add(b"\n") == ""
    assert text.add(b"\nTraveller: hi") == ""
    assert text.stopped and text.flush() == ""


def test_a_character_split_over_two_tokens_goes_out_whole():
    text = StreamText(())
    snowman = "☃".encode()
    assert text.add(b"a " + snowman[:2]) == "a "
    assert text.add(snowman[2:] + b"!") == "☃!"
    assert text.flush() == ""
