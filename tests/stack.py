"""The real stack's processes for the process-level tests and the benchmarks: Daphne and
``inference_worker`` processes on one database and Redis, their logs, and waiting for them.

Used by tests/sessions/test_stack_integration.py, tests/inference/serving/test_failover.py and
bench/play.py (which puts the repository on ``sys.path``), so each starts processes one way.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def clear_placement(redis_url: str, prefix: str = "px:play") -> None:
    """Forget every worker, slot, queue entry and snapshot under the placement prefix."""
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(f"{prefix}:*"):
        client.delete(key)


def database_url(db: dict) -> str:
    """A DATABASE_URL for child processes from a Django connection's settings_dict."""
    host, port = db["HOST"] or "127.0.0.1", db["PORT"] or 5432
    return f"postgres://{db['USER'] or 'postgres'}@{host}:{port}/{db['NAME']}"


def stack_env(*, database_url: str, redis_url: str, **extra: str) -> dict:
    """Separate worker processes (never an in-process one) on this database and Redis."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "INFERENCE_IN_PROCESS": "false",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def daphne_argv(port: int, app: str = "gallery.asgi:application") -> list[str]:
    daphne = str(Path(sys.executable).parent / "daphne")
    return [daphne, "-b", "127.0.0.1", "-p", str(port), app]


def worker_argv(name: str, *, capacity: int, fps: float | None = None) -> list[str]:
    argv = [sys.executable, "manage.py", "inference_worker", "--name", name]
    argv += ["--capacity", str(capacity), "--device", "cpu"]
    return argv + (["--fps", str(fps)] if fps else [])


class Processes:
    """Processes started from the repository root, each logging to ``logdir/<name>.log``."""

    def __init__(self, logdir: Path, env: dict):
        self.logdir = Path(logdir)
        self.env = env
        self.procs: dict[str, subprocess.Popen] = {}
        self._logs = []

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.logdir / f"{name}.log", "w")  # noqa: SIM115 - closed in stop()
        self._logs.append(log)
        proc = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.procs[name] = proc
        return proc

    def tails(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-1500:]}" for p in sorted(self.logdir.glob("*.log"))
        )

    def wait_up(self, *, port: int, placement, workers: int, timeout: float) -> None:
        """Until Daphne answers on ``port`` and ``workers`` workers are live; RuntimeError
        (with the logs' tails) if one dies or it takes longer than ``timeout``."""
        deadline = time.monotonic() + timeout
        while len(placement.live_workers()) < workers or not port_open(port):
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} died:\n{self.tails()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the stack did not come up:\n{self.tails()}")
            time.sleep(0.3)

    def stop(self) -> None:
        """SIGTERM everyone (workers hand over their sessions), kill what does not exit."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        for log in self._logs:
            log.close()
