"""The worker's plain settings: a bad one fails when the config is built, before any model loads."""

import dataclasses

import pytest

from inference.serving.config import WorkerConfig


@pytest.mark.parametrize(
    "bad", [{"capacity": 0}, {"fps": 0.0}, {"fps": -1.0}, {"threads": 0}], ids=str
)
def test_it_refuses_a_setting_no_worker_can_run_with(bad):
    with pytest.raises(ValueError):
        WorkerConfig(name="w", **bad)


def test_it_is_frozen_so_a_running_worker_never_sees_it_change():
    config = WorkerConfig(name="w")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.capacity = 3  # type: ignore[misc]
    assert (config.capacity, config.fps, config.threads, config.record) == (8, 24.0, 1, True)
