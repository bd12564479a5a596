"""Local media (the embedded default) answers byte ranges: a browser seeks in a video by them."""

import pytest
from django.test import Client


@pytest.fixture
def media_file(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    (tmp_path / "clip.mp4").write_bytes(bytes(range(10)))
    return "/media/clip.mp4"


@pytest.mark.parametrize(
    ("asked", "status", "body", "content_range"),
    [
        ("bytes=2-5", 206, bytes([2, 3, 4, 5]), "bytes 2-5/10"),
        ("bytes=7-", 206, bytes([7, 8, 9]), "bytes 7-9/10"),
        ("bytes=-3", 206, bytes([7, 8, 9]), "bytes 7-9/10"),
        ("bytes=8-100", 206, bytes([8, 9]), "bytes 8-9/10"),
        ("bytes=10-", 416, b"", "bytes */10"),
        ("bytes=5-2", 416, b"", "bytes */10"),
    ],
)
def test_a_range_is_answered_with_those_bytes(media_file, asked, status, body, content_range):
    response = Client().get(media_file, HTTP_RANGE=asked)
    assert response.status_code == status
    assert response.content == body and response["Content-Range"] == content_range


@pytest.mark.parametrize("asked", [None, "garbage", "bytes=1-2,4-5", "lines=1-2"])
def test_no_range_or_one_it_cannot_read_gets_the_whole_file(media_file, asked):
    headers = {"HTTP_RANGE": asked} if asked else {}
    response = Client().get(media_file, **headers)
    assert response.status_code == 200 and response["Accept-Ranges"] == "bytes"
    assert b"".join(response.streaming_content) == bytes(range(10))


def test_a_missing_file_is_a_404(media_file):
    assert Client().get("/media/nope.mp4", HTTP_RANGE="bytes=0-1").status_code == 404
