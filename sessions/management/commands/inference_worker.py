"""`manage.py inference_worker`: one inference worker process (one per GPU or CPU box).

A thin shell around `inference.serving.worker.InferenceWorker` on the project's channel layer
and the Redis placement. SIGTERM/SIGINT hand every session to another worker before the
process exits;
kill -9 leaves that to the other workers' failover.
"""

import asyncio
import os
import re
import signal
import socket
import threading
import time
import tracemalloc

from channels.layers import get_channel_layer
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inference.serving.config import WorkerConfig
from inference.serving.placement import RedisPlacement
from inference.serving.worker import InferenceWorker
from sessions.worker_client import screen_generated_line
from sessions.world_store import StorageWorldStore
from worlds.cover_render import weights_digest

NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,60}$")  # a valid channel-name part


def start_tracemalloc_reports(every_s: float, out) -> None:
    """Every ``every_s`` seconds, write to ``out`` the 15 allocation sites whose size changed
    most since now (the call: when the worker is ready)."""
    tracemalloc.start()  # a no-op where PYTHONTRACEMALLOC started it
    # Only blocks from now on: the ~1M traced at import make each snapshot hold the GIL past
    # the heartbeat deadline, and the worker is reaped (seen in bench/soak.py).
    tracemalloc.clear_traces()

    def report() -> None:
        first, since = tracemalloc.take_snapshot(), time.monotonic()
        while True:
            time.sleep(every_s)
            top = tracemalloc.take_snapshot().compare_to(first, "lineno")[:15]
            head = (
                f"tracemalloc: top 15 sites by size, {time.monotonic() - since:.0f} s since ready"
            )
            out.write("\n".join([head, *map(str, top)]))
            out.flush()

    # A thread, not a task: the loop should not wait on comparing snapshots.
    threading.Thread(target=report, name="tracemalloc", daemon=True).start()


class Command(BaseCommand):
    help = "Run an inference worker: load the world model once and serve live play sessions."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--device", default=settings.INFERENCE_DEVICE, help="cpu or cuda:N")
        parser.add_argument("--capacity", type=int, default=settings.INFERENCE_CAPACITY)
        parser.add_argument("--name", default=f"{socket.gethostname()}-{os.getpid()}")
        parser.add_argument("--fps", type=float, default=settings.INFERENCE_FPS)
        parser.add_argument(
            "--threads", type=int, default=settings.INFERENCE_THREADS, help="torch threads"
        )
        parser.add_argument("--weights", default=None, help="weights file (default: shipped)")

    def handle(self, *args, **options) -> None:
        if not settings.REDIS_URL:
            raise CommandError(
                "REDIS_URL is not set: separate workers share placement through Redis. "
                "Without it the web process runs its own in-process worker."
            )
        if not NAME_RE.match(options["name"]):
            raise CommandError("--name may hold letters, digits, '.', '_' and '-' (1-60).")
        if options["capacity"] < 1 or options["fps"] <= 0 or options["threads"] < 1:
            raise CommandError("--capacity and --threads must be at least 1 and --fps above 0.")
        if not re.match(r"^(cpu|cuda(:\d+)?)$", options["device"]):
            raise CommandError("--device must be cpu or cuda:N.")
        asyncio.run(self._serve(options))

    async def _serve(self, options) -> None:
        config = WorkerConfig(
            name=options["name"],
            device=options["device"],
            capacity=options["capacity"],
            fps=options["fps"],
            threads=options["threads"],
            weights=options["weights"],
            record=settings.RECORD_SESSIONS,
            weights_digest=weights_digest(),
            vote_window_s=settings.STORY_VOTE_SECONDS,
        )
        worker = InferenceWorker(
            config,
            channel_layer=get_channel_layer(),
            placement=RedisPlacement(settings.REDIS_URL),
            screen=screen_generated_line,
            world_store=StorageWorldStore(),
        )
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, lambda: loop.create_task(worker.stop()))
        runner = loop.create_task(worker.run())
        ready = loop.create_task(worker.ready.wait())
        await asyncio.wait([runner, ready], return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if worker.ready.is_set():
            self.stdout.write(f"inference worker {worker.name} ready", ending="\n")
            self.stdout.flush()
            if settings.TRACEMALLOC_EVERY_S > 0:  # leak hunting: bench/soak.py --tracemalloc
                start_tracemalloc_reports(settings.TRACEMALLOC_EVERY_S, self.stdout)
        await runner
