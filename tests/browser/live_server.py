"""A Daphne server on a free port and Debian's Chromium, for the browser tests (conftest.py)
and `make screenshots` (screenshots.py). No Django imports: callers pass the environment."""

import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]  # fmt: skip


def chromium_path() -> str | None:
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


def launch_chromium(playwright):
    return playwright.chromium.launch(
        executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_daphne(env: dict, port: int) -> subprocess.Popen:
    # The log goes to a file, not a pipe: an unread pipe fills up and stalls a chatty server.
    log = tempfile.NamedTemporaryFile(prefix="daphne-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
         "gallery.asgi:application"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    proc.log_path = log.name
    log.close()
    return proc


def read_log(proc: subprocess.Popen) -> str:
    return Path(proc.log_path).read_text(errors="replace")


def wait_until_up(proc: subprocess.Popen, url: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = read_log(proc)
            raise RuntimeError(f"Daphne exited with {proc.returncode}:\n{out[-3000:]}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise RuntimeError(f"Daphne did not answer at {url}")


def stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    out = read_log(proc)
    Path(proc.log_path).unlink(missing_ok=True)
    return out
