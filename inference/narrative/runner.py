"""Generation off the frame path: a few threads per worker, a bounded queue, sessions in turn.

The worker's event loop submits a job (a pair of options, a narration, a reply) and awaits its
future; the frames never wait for it. ``concurrency`` threads take jobs, so that many run at
once (the embedded backend batches their streams into one decode loop, ``decoding.py``), but
never two of one session: jobs are kept per session and served round robin, one job per session
per turn, so one chatty player cannot starve the others' stories. Each job carries a deadline,
handed to the job: the narrator (``narrator.py``) answers from the grammar at once when it has
passed, and stops a model's stream when it passes mid-way. A session holds at most
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
    def __init__(
        self,
        *,
        name: str = "narrative",
        per_session: int = 4,
        max_jobs: int = 64,
        concurrency: int = 1,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self.per_session = per_session
        self.max_jobs = max_jobs
        self.concurrency = concurrency
        self._waiting: OrderedDict[str, deque[Job]] = OrderedDict()  # session -> its jobs, FIFO
        self._running: set[str] = set()  # sessions with a job on a thread now
        self._count = 0
        self._cond = threading.Condition()
        self._closed = False
        self.ran = 0
        self.expired = 0
        self._threads = [
            threading.Thread(target=self._loop, name=f"{name}-{i}", daemon=True)
            for i in range(concurrency)
        ]
        for thread in self._threads:
            thread.start()

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
        """Forget a session's waiting jobs (it ended or moved); their futures are cancelled.
        A job of it already running finishes."""
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

    def _next_job(self) -> Job | None:
        """Round robin over the sessions with no job running: the first in line gives up its
        oldest job and goes to the back. None when every waiting session has one running.
        Called with the lock held."""
        for session_id, queue in self._waiting.items():
            if session_id in self._running:
                continue
            job = queue.popleft()
            del self._waiting[session_id]
            if queue:
                self._waiting[session_id] = queue  # to the back of the line
            self._count -= 1
            self._running.add(session_id)
            return job
        return None

    def _loop(self) -> None:
        while True:
            with self._cond:
                job = None
                while not self._closed and (job := self._next_job()) is None:
                    self._cond.wait()
                if job is None:  # closed
                    return
                late = time.monotonic() > job.deadline
            ran = job.future.set_running_or_notify_cancel()
            if ran:
                with self._cond:  # past its deadline it still runs: the narrator's fast path
                    self.expired += late
                self._run(job)
            with self._cond:
                self._running.discard(job.session_id)
                self.ran += ran
                self._cond.notify_all()  # the session's next job may go now

    @staticmethod
    def _run(job: Job) -> None:
        try:
            result = job.run(job.deadline)
        except BaseException as exc:  # noqa: BLE001 (the caller decides what it means)
            job.future.set_exception(exc)
        else:
            job.future.set_result(result)
