"""The plain settings of one inference worker (its live objects, such as the channel layer and
placement, are passed to ``InferenceWorker`` beside this)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkerConfig:
    name: str  # the worker's inbox is worker_channel(name); unique among live workers
    device: str = "cpu"  # cpu or cuda:N
    capacity: int = 8  # sessions served at once
    fps: float = 24.0  # the frame rate each live camera is shown
    weights: str | None = None  # the world model's weights file (None: the shipped one)
    snapshot_every_s: float = 2.0  # a live session's snapshot is saved this often
    jpeg_quality: int = 80
    max_batch: int | None = None  # cameras per step at most (None: the scheduler's default)
    step_budget_s: float | None = None  # a step's time budget (None: the scheduler's default)
    vote_window_s: float = 15.0  # a shared story's vote closes this long after its first vote
    # torch's intra-op threads in this process. One by default: a frame's ops are too small to
    # split, and a second thread only contends with the language model's and the event loop's
    # for the cores.
    threads: int = 1
    record: bool = True  # write each session's recording to the world store (where one is given)
    weights_digest: str = ""  # names the weights in a recording (a replay on others warns)

    def __post_init__(self) -> None:
        if self.capacity < 1 or self.fps <= 0:
            raise ValueError("capacity must be >= 1 and fps > 0")
        if self.threads < 1:
            raise ValueError("threads must be >= 1")
