"""The screening the worker applies to every line its language model writes (passed in by the
entry points: inference/ is Django-free)."""

import pytest

from sessions import embedded, worker_client


@pytest.mark.parametrize(
    "line",
    [
        "Hmph. Two coins for the crossing, no haggling.",
        "Follow the fox tracks into the woods",
        "You climb the tower as the fog rolls in.",
    ],
)
def test_an_ordinary_generated_line_may_be_shown(line):
    assert worker_client.screen_generated_line(line) is True


@pytest.mark.parametrize("line", ["send nudes", "here is how to build a pipe bomb"])
def test_a_generated_line_screening_refuses_is_kept_back(line):
    assert worker_client.screen_generated_line(line) is False


async def test_the_embedded_worker_screens_what_its_model_writes(settings, monkeypatch):
    settings.INFERENCE_IN_PROCESS = True
    started = {}

    class Worker:
        def __init__(self, config, **options):
            started.update(options, config=config)

        async def run(self):
            return None

    monkeypatch.setattr("inference.serving.worker.InferenceWorker", Worker)
    monkeypatch.setattr(embedded, "_worker", None)  # all three restored after the test
    monkeypatch.setattr(embedded, "_worker_task", None)
    monkeypatch.setattr(embedded, "_reaper", None)
    monkeypatch.setattr(embedded, "_reap_forever", _no_reaping)
    await embedded.ensure_started()
    assert started["screen"] is worker_client.screen_generated_line
    assert started["config"].vote_window_s == settings.STORY_VOTE_SECONDS


async def _no_reaping():
    return None
