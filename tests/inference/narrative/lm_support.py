"""The real language models the narrative and worker tests use: SmolLM2 and Gemma in this
process (llama.cpp), and llama.cpp's OpenAI-compatible server serving SmolLM2 on loopback for
the openai backend. With CI=true a missing package or a server that does not start fails the
test; elsewhere it skips. A test module's conftest imports the fixtures it needs."""

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from inference.narrative.backends import EmbeddedLM, LMError, OpenAILM, embedded, weights_path

CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
SERVER_START_S = 90.0


def missing(what: str, why: str):
    message = f"{what} is not available: {why}"
    if CI:
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message)


def _embedded(model: str) -> EmbeddedLM:
    if importlib.util.find_spec("llama_cpp") is None:
        missing("llama-cpp-python", "pip install -r requirements.txt")
    lm = embedded(model)
    try:
        lm.load()
    except LMError as exc:
        missing(f"the {model} weights", str(exc))
    return lm


@pytest.fixture(scope="session")
def smollm2() -> EmbeddedLM:
    return _embedded("smollm2")


@pytest.fixture(scope="session")
def gemma() -> EmbeddedLM:
    return _embedded("gemma")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# `python -m llama_cpp.server` with the model parameters the embedded backend uses (no AMX
# buffers where the build has AMX: they segfault on Sapphire Rapids)
SERVE = (
    "import runpy, llama_cpp.llama_cpp as c; from inference.narrative.backends import "
    "model_params; c.llama_model_default_params = model_params; "
    "runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)"
)


@pytest.fixture(scope="session")
def lm_server():
    """`python -m llama_cpp.server` serving SmolLM2 on a loopback port; yields its /v1 URL."""
    if importlib.util.find_spec("llama_cpp.server") is None:
        missing("llama_cpp.server", "pip install 'llama-cpp-python[server]'")
    try:
        model = weights_path("smollm2")
    except LMError as exc:
        missing("the smollm2 weights", str(exc))
    port = _free_port()
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
    args = [sys.executable, "-c", SERVE, "--model", str(model),
            "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", "1024", "--n_threads", "1", "--verbose", "False"]  # fmt: skip
    root = Path(__file__).resolve().parents[3]  # SERVE imports the project
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                missing("llama_cpp.server", f"exited with {proc.returncode}, see {log.name}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{url}/models", timeout=2) as response:  # noqa: S310
                    if json.load(response).get("data"):
                        break
            if time.monotonic() > deadline:
                missing("llama_cpp.server", f"not answering after {SERVER_START_S} s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture
def served(lm_server) -> OpenAILM:
    return OpenAILM(lm_server, "smollm2", timeout_s=30.0)
