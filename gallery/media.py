"""Local media for the embedded default (no S3): Django's static file view, with byte ranges.

Browsers seek in a video by asking for a byte range; without an answer to it (Django's `serve`
sends the whole file), a replay's scrubber jumps back to the start. S3 answers ranges itself."""

import re

from django.http import HttpRequest, HttpResponse
from django.views.static import serve

RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def serve_media(request: HttpRequest, path: str, document_root: str) -> HttpResponse:
    response = serve(request, path, document_root=document_root)
    asked = RANGE.match(request.headers.get("Range", "").strip())
    if response.status_code != 200 or asked is None:
        response["Accept-Ranges"] = "bytes"
        return response
    body = b"".join(response.streaming_content)
    size = len(body)
    first, last = asked.groups()
    if first == "":  # the last N bytes
        start, end = max(0, size - int(last or 0)), size - 1
    else:
        start, end = int(first), min(size - 1, int(last)) if last else size - 1
    if start >= size or start > end:
        refused = HttpResponse(status=416)
        refused["Content-Range"] = f"bytes */{size}"
        return refused
    partial = HttpResponse(body[start : end + 1], status=206, content_type=response["Content-Type"])
    partial["Content-Range"] = f"bytes {start}-{end}/{size}"
    partial["Accept-Ranges"] = "bytes"
    return partial
