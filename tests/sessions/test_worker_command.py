"""`manage.py inference_worker` refuses bad settings and flags before loading anything."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


def test_it_needs_redis_to_share_placement_with_the_web_processes(settings):
    settings.REDIS_URL = ""
    with pytest.raises(CommandError, match="REDIS_URL"):
        call_command("inference_worker", "--name", "w1")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--name", "bad name!"], "--name"),
        (["--name", "w1", "--capacity", "0"], "--capacity"),
        (["--name", "w1", "--fps", "-3"], "--fps"),
        (["--name", "w1", "--threads", "0"], "--threads"),
        (["--name", "w1", "--device", "tpu"], "--device"),
    ],
)
def test_it_rejects_bad_flags(settings, redis_url, flags, message):
    with pytest.raises(CommandError, match=message):
        call_command("inference_worker", *flags)
