"""The worker's fixtures (worker_support.py): an engine per module, the Redis pub/sub layer, a
placement under its own prefix, a running worker."""

from tests.inference.serving.worker_support import engine, layer, placement, worker  # noqa: F401
