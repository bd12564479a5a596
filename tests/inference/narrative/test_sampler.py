"""Sampling under a grammar (sampler.py): only the tokens it allows are taken, on logits alone
and on the real models, and story options written under ``story_writing.OPTIONS_GRAMMAR`` parse
whole."""

import re
from dataclasses import replace

import numpy as np
import pytest

from inference.narrative import story_writing
from inference.narrative.lm import LMError, Sampling
from inference.narrative.sampler import GRAMMAR_SHORTLIST, allowed_tokens, sample
from inference.narrative.story import story_start

GREEDY = Sampling(max_tokens=8, temperature=0.0, repeat_penalty=1.0, seed=1)
BEACH = {"biome": "beach", "weather": "fog", "time": "dusk", "creatures": []}
OPENING = "The lighthouse lamp went dark at midnight, and the boats are still out."
STRICT = r"\s*([A-Z][^\n]*[A-Za-z0-9])\n2\. ([A-Z][^\n]*[A-Za-z0-9])\s*"


class OnlyTokens:
    """A grammar stand-in that allows a fixed set of tokens, and counts what it judged."""

    def __init__(self, tokens: set[int]) -> None:
        self.tokens = tokens
        self.judged: list[int] = []

    def allowed(self, candidates: np.ndarray) -> np.ndarray:
        self.judged.append(len(candidates))
        return np.isin(candidates, list(self.tokens))


def test_only_a_token_the_grammar_allows_is_taken_greedy_or_sampled():
    logits = np.linspace(0.0, 10.0, 5000).astype(np.float32)  # the likeliest is the last
    rng = np.random.default_rng(0)
    for s in (GREEDY, replace(GREEDY, temperature=0.9)):
        for _ in range(20):
            assert sample(logits, [], s, rng, grammar=OnlyTokens({4990, 4995})) in {4990, 4995}


def test_the_whole_vocabulary_is_judged_only_where_no_likely_token_fits():
    logits = np.linspace(0.0, 10.0, 5000).astype(np.float32)
    likely = OnlyTokens({4999, 3})
    assert allowed_tokens(logits, likely).tolist() == [4999]
    assert likely.judged == [GRAMMAR_SHORTLIST]
    unlikely = OnlyTokens({3})
    assert allowed_tokens(logits, unlikely).tolist() == [3]
    assert unlikely.judged == [GRAMMAR_SHORTLIST, 5000]


def test_a_banned_token_stays_banned_under_a_grammar_and_nothing_left_is_an_lm_error():
    logits = np.linspace(0.0, 10.0, 300).astype(np.float32)
    token = sample(logits, [], GREEDY, np.random.default_rng(0), [299], OnlyTokens({299, 5}))
    assert token == 5
    with pytest.raises(LMError, match="grammar"):
        sample(logits, [], GREEDY, np.random.default_rng(0), [299], OnlyTokens({299}))


def test_options_in_the_grammars_form_are_read_whole_and_free_text_leniently():
    assert story_writing.read_options(" Follow the bird\n2. Make camp, and wait") == [
        "Follow the bird",
        "Make camp, and wait",
    ]
    assert story_writing.read_options(' "follow the bird."\n2) make camp\n') == [
        "Follow the bird",
        "Make camp",
    ]


@pytest.mark.parametrize("model", ["gemma", "smollm2"])
def test_options_written_under_the_grammar_parse_by_construction(request, model):
    lm = request.getfixturevalue(model)
    prompt = story_writing.options_prompt(story_start(OPENING, BEACH), BEACH)
    for seed in range(4):
        text = "".join(lm.complete(prompt, replace(story_writing.OPTION_SAMPLING, seed=seed)))
        written = re.fullmatch(STRICT, text)
        assert written, text
        assert all(story_writing.valid_option(label) for label in written.groups()), text


def test_a_grammar_that_does_not_parse_fails_its_request_alone(smollm2):
    with pytest.raises(LMError, match="grammar"):
        list(smollm2.complete("Once upon a time,", replace(GREEDY, grammar="root ::= [")))
    assert "".join(smollm2.complete("Monday, Tuesday, Wednesday, Thursday,", GREEDY)).strip()


def test_the_openai_backend_sends_the_grammar_and_the_server_keeps_to_it(served):
    prompt = story_writing.options_prompt(story_start(OPENING, BEACH), BEACH)
    for seed in range(2):
        text = "".join(served.complete(prompt, replace(story_writing.OPTION_SAMPLING, seed=seed)))
        assert re.fullmatch(STRICT, text), text
