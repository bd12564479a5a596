"""glibc's allocator, set for a frame loop (called once per process by `WorldEngine.load`).

A frame's large temporaries (a few MB each: the decoder's full-size layers) are above glibc's
default mmap threshold, so each one was mapped fresh and unmapped when freed, and every frame
paid a page fault per 4 KB page it touched: copies into fresh buffers ran at 1.8 GB/s against
11 GB/s into reused ones, and a 192-pixel frame took 9.7 ms instead of 5.5 (docs/decisions.md).
Keeping freed memory in the heap (no trimming, the largest mmap threshold glibc allows) lets
the next frame reuse the same pages; the process's memory stays at its peak instead of
breathing, which is also what a steady RSS over hours needs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's upper limit on 64-bit
TRIM_THRESHOLD = 1024 * 1024 * 1024
TOP_PAD = 64 * 1024 * 1024

_done = False


def keep_freed_memory() -> bool:
    """Set glibc's thresholds (once; a no-op off glibc). -> whether they are set."""
    global _done
    if _done:
        return True
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = libc.mallopt if libc else None
    except (OSError, AttributeError):
        mallopt = None
    if mallopt is None:
        return False
    ok = all(
        mallopt(param, value) == 1
        for param, value in (
            (M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            (M_TRIM_THRESHOLD, TRIM_THRESHOLD),
            (M_TOP_PAD, TOP_PAD),
        )
    )
    if not ok:
        log.warning("mallopt refused the frame loop's allocator settings")
    _done = ok
    return ok
