"""Fixtures of the web-side play tests (defined in play_fixtures.py), visible to every module
here; the worker tests use their own helpers in worker_support.py."""

from tests.sessions.play_fixtures import (  # noqa: F401
    clean_placement,
    outsider,
    player,
    short_limits,
    worker_slots,
    world,
)
