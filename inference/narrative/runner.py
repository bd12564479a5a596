"""Generation off the frame path: one thread per worker, a bounded queue, sessions in turn.

The worker's event loop submits a job (a pair of options, a narration, a reply) and awaits its
future; the frames never wait for it. Jobs are kept per session and served round robin, one job
per session per turn, so one chatty player cannot starve the others' stories. Each job carries a
deadline, handed to the job: the narrator (``narrator.py``) answers from the grammar at once
when it has passed, and stops a model's stream when it passes mid-way. A session holds at most
``per_session`` waiting jobs and the runner ``max_jobs``; past that ``submit`` raises
``QueueFull`` at once.

Like vLLM's scheduler, the queue (``_waiting``) and the choice of who runs next
(``_next_job``) are separate, so the policy is one small function.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field


class QueueFull(RuntimeError):
    """Too many jobs waiting (for this session, or in all)."""


@dataclass
class Job:
    session_id: str
    run: Callable[[float], object]  # called with the deadline (time.monotonic() seconds)
    deadline: float
    future: Future = field(default_factory=Future)
    queued_at: float = field(default_factory=time.monotonic)


class GenerationRunner:
    def __init__(self, *, name: str = "narrative", per_session: int = 4, max_jobs: int = 64):
        self.per_session = per_session
        self.max_jobs = max_jobs
        self._waiting: OrderedDict[str, deque[Job]] = OrderedDict()  # session -> its jobs, FIFO
        self._count = 0
        self._cond = threading.Condition()
        self._closed = False
        self.ran = 0
        self.expired = 0
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(
        self, session_id: str, run: Callable[[float], object], *, timeout_s: float
    ) -> Future:
        job = Job(session_id, run, time.monotonic() + timeout_s)
        with self._cond:
            if self._closed:
                raise QueueFull("the runner is closed")
            queue = self._waiting.get(session_id)
            if self._count >= self.max_jobs or (queue and len(queue) >= self.per_session):
                raise QueueFull(f"too many generation jobs waiting for {session_id}")
            self._waiting.setdefault(session_id, deque()).append(job)
            self._count += 1
            self._cond.notify()
        return job.future

    def waiting(self, session_id: str | None = None) -> int:
        with self._cond:
            if session_id is None:
                return self._count
            return len(self._waiting.get(session_id, ()))

    def drop(self, session_id: str) -> None:
        """Forget a session's waiting jobs (it ended or moved); their futures are cancelled."""
        with self._cond:
            jobs = self._waiting.pop(session_id, deque())
            self._count -= len(jobs)
        for job in jobs:
            job.future.cancel()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            jobs = [job for queue in self._waiting.values() for job in queue]
            self._waiting.clear()
            self._count = 0
            self._cond.notify_all()
        for job in jobs:
            job.future.cancel()

    def _next_job(self) -> Job:
        """Round robin: the first session in line gives up its oldest job and goes to the back.
        Called with the lock held and at least one job waiting."""
        session_id, queue = next(iter(self._waiting.items()))
        job = queue.popleft()
        del self._waiting[session_id]
        if queue:
            self._waiting[session_id] = queue  # to the back of the line
        self._count -= 1
        return job

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._count and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                job = self._next_job()
            if not job.future.set_running_or_notify_cancel():
                continue
            if time.monotonic() > job.deadline:
                self.expired += 1  # it still runs: past its deadline it takes the fast path
            try:
                result = job.run(job.deadline)
            except BaseException as exc:  # noqa: BLE001 (the caller decides what it means)
                job.future.set_exception(exc)
            else:
                job.future.set_result(result)
            self.ran += 1
