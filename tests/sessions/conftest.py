"""Fixtures of the play tests, visible to every module here: the web side's (play_fixtures.py)
and the worker's (tests/inference/serving/worker_support.py; a module may define its own)."""

from tests.inference.serving.worker_support import engine, layer, placement, worker  # noqa: F401
from tests.sessions.play_fixtures import (  # noqa: F401
    clean_placement,
    outsider,
    player,
    short_limits,
    worker_slots,
    world,
)
