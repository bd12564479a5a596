"""Which frames a socket sends on: the present, not a backlog.

Under overload the channel layer hands a web process frames faster than it can send them, and
each socket's queue grows (the soak saw frames 386 s late). A frame that reaches the socket
later than its quickest one by more than `FRAME_STALE_S` is dropped instead: dropping costs
nothing, so a backlog drains at once and the player sees the world as it is now. The
worker's and the web host's clocks may differ, so the quickest lag seen is the baseline, not
zero; a worker clock that steps back looks like a backlog, so after `REBASE_S` of dropping
without a break the current lag becomes the baseline.
"""

from __future__ import annotations

import math

FRAME_STALE_S = 0.5
REBASE_S = 10.0


class FrameLag:
    def __init__(self, stale_s: float = FRAME_STALE_S, rebase_s: float = REBASE_S):
        self.stale_s = stale_s
        self.rebase_s = rebase_s
        self.floor = math.inf  # the quickest (now - sent) seen
        self.dropped = 0
        self._dropping_since: float | None = None

    def fresh(self, sent: float | None, now: float) -> bool:
        """Whether a frame stamped ``sent`` (the worker's wall clock; None: unstamped, always
        sent) is worth sending at ``now``."""
        if sent is None:
            return True
        lag = now - sent
        self.floor = min(self.floor, lag)
        if lag - self.floor <= self.stale_s:
            self._dropping_since = None
            return True
        if self._dropping_since is None:
            self._dropping_since = now
        elif now - self._dropping_since >= self.rebase_s:
            self.floor, self._dropping_since = lag, None  # the worker's clock moved
            return True
        self.dropped += 1
        return False
