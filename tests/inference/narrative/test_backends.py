"""The language-model backends on real models: embedded llama.cpp and a real llama_cpp.server."""

import pytest

from inference.narrative.backends import (
    EmbeddedLM,
    LMError,
    NarrativeConfig,
    OpenAILM,
    Sampling,
    embedded,
    model_params,
    open_backends,
    reencoded_weights,
    run_weights,
    weights_path,
)
from inference.narrative.decoding import SPLIT_MAX

SHORT = Sampling(max_tokens=12, temperature=0.0, seed=1)
GREETING = [
    {"role": "system", "content": "You are Marigold, a cheerful baker."},
    {"role": "user", "content": "Hello! Who are you?"},
]


def test_the_config_defaults_to_the_embedded_models():
    config = NarrativeConfig.from_env({})
    assert (config.backend, config.story_model, config.chat_model) == (
        "embedded",
        "gemma",
        "smollm2",
    )


def test_the_embedded_models_take_eight_generations_at_once_unless_told_otherwise():
    assert NarrativeConfig.from_env({}).concurrency == 8
    assert NarrativeConfig.from_env({"NARRATIVE_LM_CONCURRENCY": "1"}).concurrency == 1


def test_the_config_reads_an_openai_endpoint_and_keeps_its_key_out_of_repr():
    env = {"NARRATIVE_LM": "openai", "NARRATIVE_LM_URL": "http://gpu:8000/v1/",
           "NARRATIVE_LM_MODEL": "big", "NARRATIVE_LM_KEY": "sekrit"}  # fmt: skip
    config = NarrativeConfig.from_env(env)
    story, chat = open_backends(config)
    assert story is chat and isinstance(story, OpenAILM)
    assert (story.url, story.model, story.key) == ("http://gpu:8000/v1", "big", "sekrit")
    assert "sekrit" not in repr(config)


@pytest.mark.parametrize(
    "env",
    [
        {"NARRATIVE_LM": "gpt"},
        {"NARRATIVE_LM": "openai"},  # no URL
        {"NARRATIVE_STORY_MODEL": "llama70b"},
        {"NARRATIVE_LM_THREADS": "0"},
        {"NARRATIVE_LM_CONCURRENCY": "-2"},
        {"NARRATIVE_LM_TIMEOUT_S": "soon"},
        {"NARRATIVE_LM_WEIGHTS": "fp8"},
    ],
)
def test_a_bad_setting_fails_loudly(env):
    with pytest.raises(ValueError, match="NARRATIVE_"):
        NarrativeConfig.from_env(env)


def test_the_weights_setting_is_read_and_an_explicit_choice_stands():
    assert NarrativeConfig.from_env({}).weights == "auto"
    assert NarrativeConfig.from_env({"NARRATIVE_LM_WEIGHTS": " BF16 "}).weights == "bf16"
    import llama_cpp

    for explicit in ("shipped", "bf16", "q8"):
        assert run_weights(explicit) == (explicit,) == run_weights(explicit, "gemma")
    # where the build has no bfloat16 kernels SmolLM2 runs in Q8_0 and Gemma as shipped; where
    # it has, SmolLM2 in the faster on this CPU of bf16 and Q8_0 (timed at load)
    bf16 = b"AVX512_BF16 = 1" in llama_cpp.llama_print_system_info()
    assert run_weights("auto") == (("bf16", "q8") if bf16 else ("q8",))
    assert run_weights("auto", "gemma") == (("bf16",) if bf16 else ("shipped",))
    with pytest.raises(ValueError, match="weights"):
        run_weights("int2")


@pytest.mark.parametrize("faster", [("bf16", True), ("q8", False)])
def test_an_auto_load_runs_the_way_whose_step_is_shortest_on_this_cpu(
    monkeypatch, tmp_path, faster
):
    import llama_cpp

    from inference.narrative import llama_batch
    from inference.narrative.backends import embedded_lm

    monkeypatch.setattr(embedded_lm, "STEP_CHOICES", tmp_path / "step_choices.json")
    timed = []

    def step_time(weights, *, flash_attention, **_):  # this CPU's figures, as the test orders
        way = ("q8" if "Q8_0" in weights.desc() else "bf16", flash_attention)
        timed.append(way)
        return 0.05 if way == faster else 0.08

    monkeypatch.setattr(llama_batch, "step_time", step_time)
    lm = EmbeddedLM("smollm2", weights="auto")  # its own, not the tests' shared one
    try:
        lm.load()
        if b"AVX512_BF16 = 1" in llama_cpp.llama_print_system_info():
            assert len(timed) == 4 and len(set(timed)) == 4  # each weights, with flash and not
            assert (lm.encoding, lm.flash_attention) == faster
        else:  # Q8_0 only, with flash attention or without
            assert sorted(timed) == [("q8", False), ("q8", True)] and lm.encoding == "q8"
        assert "Friday" in "".join(lm.complete("Monday, Tuesday, Wednesday, Thursday,", SHORT))
    finally:
        lm.decoder.close()
    # remembered for this CPU: the next load times nothing and runs the same way
    timed.clear()
    again = EmbeddedLM("smollm2", weights="auto")
    try:
        again.load()
        assert timed == [] and (again.encoding, again.flash_attention) == (
            lm.encoding,
            lm.flash_attention,
        )
    finally:
        again.decoder.close()


def test_weights_whose_step_cannot_be_timed_still_run_in_the_first_way(monkeypatch, tmp_path):
    from inference.narrative import llama_batch
    from inference.narrative.backends import embedded_lm

    monkeypatch.setattr(embedded_lm, "STEP_CHOICES", tmp_path / "step_choices.json")

    def step_time(weights, **_):
        raise LMError("llama_decode failed while timing a step")

    monkeypatch.setattr(llama_batch, "step_time", step_time)
    lm = EmbeddedLM("smollm2", weights="q8")  # its own; Q8_0, with flash attention or not
    try:
        lm.load()
        assert (lm.encoding, lm.flash_attention) == ("q8", True)
        assert "Friday" in "".join(lm.complete("Monday, Tuesday, Wednesday, Thursday,", SHORT))
    finally:
        lm.decoder.close()


def test_a_step_is_timed_on_a_context_of_its_own(smollm2):
    from inference.narrative.llama_batch import step_time

    weights = smollm2.load()._model
    short, long = (step_time(weights, flash_attention=False, sequences=n, read=8) for n in (2, 8))
    assert 0 < short < long < 5  # more sequences, a longer step
    assert "Friday" in "".join(smollm2.complete("Monday, Tuesday, Wednesday, Thursday,", SHORT))


@pytest.mark.parametrize("encoding, bits", [("bf16", 16), ("q8", 8)])
def test_a_reencoded_copy_is_made_once_and_predicts_as_the_shipped_weights_do(
    smollm2, encoding, bits
):
    shipped_file = weights_path("smollm2")
    copy = reencoded_weights(shipped_file, encoding)
    made = copy.stat().st_mtime_ns
    assert reencoded_weights(shipped_file, encoding) == copy and copy.stat().st_mtime_ns == made
    # 4.5 bits a weight as shipped (the vocabulary's embedding is 8 and stays so in Q8_0)
    assert copy.stat().st_size > (1.4 if bits == 8 else 2.5) * shipped_file.stat().st_size
    shipped = embedded("smollm2", weights="shipped")
    other = embedded("smollm2", weights=encoding)
    shipped.load(), other.load()
    assert (shipped.encoding, other.encoding) == ("shipped", encoding)
    # the shipped 4-bit file's split of a step's outputs is measured; the copies never split
    assert shipped.decoder.split_outputs in (1, SPLIT_MAX) and other.decoder.split_outputs == 1
    greedy = Sampling(max_tokens=24, temperature=0.0)
    for lm in (shipped, other):
        assert "Friday" in "".join(lm.complete("Monday, Tuesday, Wednesday, Thursday,", greedy))
    # the same reply, or one that parts late ("Hello there, dear one!" / "... dear friend!"):
    # the copy keeps the model's next-token choices
    a, b = ("".join(lm.chat(GREETING, greedy)).split() for lm in (shipped, other))
    assert a[:3] == b[:3], (a, b)


def test_an_unknown_reencoding_is_refused():
    with pytest.raises(ValueError, match="re-encoding"):
        reencoded_weights(weights_path("smollm2"), "int2")


def test_a_build_with_amx_loads_the_weights_without_extra_buffers(monkeypatch):
    # ggml's AMX matmul segfaults on Sapphire Rapids: such builds keep the weights as loaded
    import llama_cpp

    info = llama_cpp.llama_print_system_info()
    without = info.replace(b"AMX_INT8 = 1 | ", b"")
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: without)
    assert model_params().use_extra_bufts  # llama.cpp's default elsewhere
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: without + b"AMX_INT8 = 1 | ")
    assert not model_params().use_extra_bufts


def test_off_opens_no_model():
    assert open_backends(NarrativeConfig.from_env({"NARRATIVE_LM": "off"})) == (None, None)


def test_the_weights_come_from_the_installed_packages(smollm2, gemma):
    assert weights_path("smollm2").name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    gemma_file = weights_path("gemma")
    assert gemma_file.suffix == ".gguf" and gemma_file.stat().st_size > 200_000_000


def test_an_unknown_embedded_model_is_an_lm_error():
    with pytest.raises(LMError):
        weights_path("gpt-5")


def test_the_embedded_model_streams_a_completion(gemma):
    pieces = list(gemma.complete("Monday, Tuesday, Wednesday, Thursday,", SHORT))
    assert len(pieces) > 1 and "Friday" in "".join(pieces)


def test_the_embedded_model_streams_a_chat_reply(smollm2):
    text = "".join(smollm2.chat(GREETING, SHORT))
    assert len(text.split()) >= 2
    assert "<|im" not in text  # the template's markers stay out of the reply


def test_a_begun_reply_is_continued_not_repeated(smollm2):
    prefill = "No. I won't help with that."
    text = "".join(smollm2.chat(GREETING, SHORT, prefill=prefill))
    assert not text.strip().startswith(prefill)
    assert text.strip()


def test_a_base_model_without_a_chat_template_says_so(gemma):
    with pytest.raises(LMError, match="chat template"):
        list(gemma.chat(GREETING, SHORT))


def test_the_openai_backend_streams_from_a_real_server(served):
    completion = list(served.complete("Monday, Tuesday, Wednesday, Thursday,", SHORT))
    chat = "".join(served.chat(GREETING, SHORT))
    assert len(completion) > 1 and "".join(completion).strip()
    assert len(chat.split()) >= 2 and "<|im" not in chat


def test_an_unreachable_server_is_an_lm_error():
    lm = OpenAILM("http://127.0.0.1:9/v1", "x", timeout_s=2.0)
    with pytest.raises(LMError, match="openai:x"):
        list(lm.complete("hello", SHORT))


def test_a_missing_model_file_is_an_lm_error_on_load(monkeypatch):
    lm = EmbeddedLM("smollm2")
    monkeypatch.setattr("inference.narrative.backends.embedded_lm.weights_path", _raise)
    with pytest.raises(LMError):
        lm.load()


def _raise(model):
    raise LMError(f"{model} is gone")
