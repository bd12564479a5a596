"""Local media (the embedded default) answers byte ranges: a browser seeks in a video by them.

The view is called itself: the suite may run with S3 configured, where /media/ is not routed."""

import pytest
from django.http import Http404
from django.test import RequestFactory

from gallery.media import serve_media


@pytest.fixture
def fetch(tmp_path):
    (tmp_path / "clip.mp4").write_bytes(bytes(range(10)))

    def get(name: str, **headers):
        request = RequestFactory().get(f"/media/{name}", **headers)
        return serve_media(request, name, document_root=str(tmp_path))

    return get


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
def test_a_range_is_answered_with_those_bytes(fetch, asked, status, body, content_range):
    response = fetch("clip.mp4", HTTP_RANGE=asked)
    assert response.status_code == status
    assert response.content == body and response["Content-Range"] == content_range


@pytest.mark.parametrize("asked", [None, "garbage", "bytes=1-2,4-5", "lines=1-2"])
def test_no_range_or_one_it_cannot_read_gets_the_whole_file(fetch, asked):
    headers = {"HTTP_RANGE": asked} if asked else {}
    response = fetch("clip.mp4", **headers)
    assert response.status_code == 200 and response["Accept-Ranges"] == "bytes"
    assert b"".join(response.streaming_content) == bytes(range(10))


def test_a_missing_file_is_a_404(fetch):
    with pytest.raises(Http404):
        fetch("nope.mp4", HTTP_RANGE="bytes=0-1")
