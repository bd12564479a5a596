"""The embedded backend: a small GGUF model run by llama.cpp inside this process, its streams
batched by one decode loop (``decoding.py``)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from inference.narrative import decoding, llama_batch
from inference.narrative.backends.weights import (
    VAR_MODELS,
    VAR_MODELS_LOCK,
    model_params,
    reencoded_weights,
    run_weights,
    weights_path,
)
from inference.narrative.lm import LMError, Sampling

log = logging.getLogger(__name__)

# Whether llama.cpp runs attention as flash attention, which pays off by CPU and model: on an
# AMD EPYC SmolLM2's step of 8 sequences took 65 ms with it, 76 without; on an Intel Xeon (AMX)
# 104 with it, 77 without, and 353 against 180 with a newcomer's 26-token line in the step.
# Where two, the load times both (``EmbeddedLM.load``); Gemma's 256-wide heads keep it (Xeon:
# 118 ms against 130, 238 against 246).
FLASH_ATTENTION = {"smollm2": (True, False), "gemma": (True,)}
STEP_CHOICES = VAR_MODELS / "step_choices.json"  # the ways of running the weights timed here
MIN_SEQUENCES = 8


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

    def load(self) -> decoding.BatchDecoder:
        with self._lock:
            if self.decoder is None:
                try:
                    import llama_cpp
                    from llama_cpp import _internals
                except ImportError:
                    raise LMError("llama-cpp-python is not installed") from None
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
                self.encoding, self.flash_attention = self._fastest(loaded, llama_batch.step_time)
                for encoding, weights in loaded.items():
                    if encoding != self.encoding:
                        weights.close()
                weights = loaded[self.encoding]
                self._format = _chat_formatter(weights)
                self.decoder = decoding.BatchDecoder(
                    weights, sequences=self.sequences, n_ctx_seq=self.n_ctx,
                    threads=self.threads, name=f"decode-{self.model}",
                    split_outputs=decoding.SPLIT_OUTPUTS[self.encoding],
                    flash_attention=self.flash_attention,
                )  # fmt: skip
            return self.decoder

    def _fastest(self, loaded: dict, step_time: Callable[..., float]) -> tuple[str, bool]:
        """(encoding, flash attention) of the loaded weights whose step is the shortest here,
        each way timed where there are two or more (``llama_batch.step_time``)."""
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
        with VAR_MODELS_LOCK:
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
