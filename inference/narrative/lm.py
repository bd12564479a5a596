"""What the narrative asks of a language model, whichever backend runs it: the sampling, the
interface (``LanguageModel``), its one error, and the settings that choose a backend
(``NarrativeConfig``). The backends themselves live in ``backends/``. Django-free.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

BACKENDS = ("embedded", "openai", "off")
MODELS = ("smollm2", "gemma")  # embedded weights, by the package that ships them
WEIGHTS = ("auto", "shipped", "bf16", "q8")  # how the embedded weights are held (``run_weights``)


class LMError(RuntimeError):
    """The backend could not answer (not installed, unreachable, a bad reply)."""


@dataclass(frozen=True)
class Sampling:
    max_tokens: int = 32
    temperature: float = 0.8
    top_p: float = 0.95
    repeat_penalty: float = 1.15  # llama.cpp's; the openai backend sends frequency_penalty
    stop: tuple[str, ...] = ()
    seed: int | None = None
    # Lines the output must not repeat AVOID_RUN tokens running of (the embedded decoder bans
    # the token that would; a server has no such option, and the caller's checks stand alone).
    avoid: tuple[str, ...] = ()
    # A GBNF grammar the output must follow (llama.cpp's; the embedded decoder masks the tokens
    # it refuses, the openai backend sends it as llama.cpp's servers take it), "" for none.
    grammar: str = ""


class LanguageModel(Protocol):
    name: str  # what the session's status reports, e.g. "embedded:smollm2"

    def complete(self, prompt: str, sampling: Sampling) -> Iterator[str]: ...

    def chat(self, messages: list[dict], sampling: Sampling, prefill: str = "") -> Iterator[str]:
        """The reply to `messages`, which begins with `prefill` (not yielded again)."""
        ...


@dataclass(frozen=True)
class NarrativeConfig:
    backend: str = "embedded"  # NARRATIVE_LM: embedded | openai | off
    story_model: str = "gemma"  # NARRATIVE_STORY_MODEL: embedded weights for story options
    chat_model: str = "smollm2"  # NARRATIVE_CHAT_MODEL: embedded weights for characters
    url: str = ""  # NARRATIVE_LM_URL, e.g. http://gpu-host:8000/v1
    model: str = ""  # NARRATIVE_LM_MODEL: the served model's name
    key: str = field(default="", repr=False)  # NARRATIVE_LM_KEY
    weights: str = "auto"  # NARRATIVE_LM_WEIGHTS: auto | shipped | bf16 | q8 (``run_weights``)
    threads: int = 1  # NARRATIVE_LM_THREADS: llama.cpp threads (1: the frames keep a core)
    concurrency: int = 8  # NARRATIVE_LM_CONCURRENCY: generations at once per worker (1: in turn)
    timeout_s: float = 10.0  # NARRATIVE_LM_TIMEOUT_S: one HTTP request to the openai backend

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> NarrativeConfig:
        """Read once at start; a bad value fails loudly (ValueError naming the variable)."""
        env = os.environ if env is None else env
        backend = env.get("NARRATIVE_LM", "embedded").strip().lower() or "embedded"
        if backend not in BACKENDS:
            raise ValueError(f"NARRATIVE_LM must be one of {', '.join(BACKENDS)}, not {backend!r}")
        models = {}
        defaults = (("NARRATIVE_STORY_MODEL", "gemma"), ("NARRATIVE_CHAT_MODEL", "smollm2"))
        for var, default in defaults:
            models[var] = env.get(var, default).strip().lower() or default
            if models[var] not in MODELS:
                raise ValueError(f"{var} must be one of {', '.join(MODELS)}")
        weights = env.get("NARRATIVE_LM_WEIGHTS", "auto").strip().lower() or "auto"
        if weights not in WEIGHTS:
            raise ValueError(f"NARRATIVE_LM_WEIGHTS must be one of {', '.join(WEIGHTS)}")
        url = env.get("NARRATIVE_LM_URL", "").strip().rstrip("/")
        if backend == "openai" and not url.startswith(("http://", "https://")):
            raise ValueError("NARRATIVE_LM=openai needs NARRATIVE_LM_URL (http://host:port/v1)")
        return cls(
            backend=backend,
            story_model=models["NARRATIVE_STORY_MODEL"],
            chat_model=models["NARRATIVE_CHAT_MODEL"],
            weights=weights,
            url=url,
            model=env.get("NARRATIVE_LM_MODEL", "").strip(),
            key=env.get("NARRATIVE_LM_KEY", "").strip(),
            threads=_positive(env, "NARRATIVE_LM_THREADS", 1, int),
            concurrency=_positive(env, "NARRATIVE_LM_CONCURRENCY", 8, int),
            timeout_s=_positive(env, "NARRATIVE_LM_TIMEOUT_S", 10.0, float),
        )


_Number = TypeVar("_Number", int, float)


def _positive(
    env: Mapping[str, str], name: str, default: _Number, kind: Callable[[str], _Number]
) -> _Number:
    raw = env.get(name, "")
    try:
        value = kind(raw) if raw.strip() else default
    except ValueError:
        raise ValueError(f"{name} must be a positive number, not {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be a positive number, not {raw!r}")
    return value
