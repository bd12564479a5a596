"""The step plan of an inference worker: which sessions step next, and with how many frames.

The worker shows every live session one frame per tick from that session's buffer (the pacer),
while a producer keeps the buffers filled: one batched ``engine.step`` after another, each for
the sessions that need frames. This module only decides (vLLM v1's scheduler/engine split):
a session steps when its held keys changed, a text event waits, or its buffer would run dry
before the next step can land.

Dynamic chunks: while a session's held keys stay the same its chunk grows (with how long they
have been held) to the worker's current cap — cheaper per frame; a new key set or a text event
cuts the chunk: the frames made for the old keys are dropped when the answer lands, so the
answer is the next frame shown. Answers are one frame by default (``answer_max``): a chunk's
first frame is ready only with its last, and the refill that follows comes right after. The cap
itself follows the load (``ChunkController``), up to a decoder batch shared by the live cameras
(``EngineCore.chunk_cap``): with many cameras a step is full without long chunks.
"""

from dataclasses import dataclass

from inference.serving.session import Camera, SessionStatus


def chunk_length(
    prev_keys: frozenset | None,
    keys: frozenset,
    event_pending: bool,
    cap: int,
    cover: int = 1,
    held: int | None = None,
) -> int:
    """Frames for a session's next step: after a change, just enough to bridge the next step
    (``cover``, 1 when the worker keeps up); while the keys stay the same, growing with how
    long they have been held (``held`` frames so far; None: go straight to the cap) up to the
    cap — keys held briefly waste little when the next change cuts the chunk."""
    if event_pending or prev_keys is None or keys != prev_keys:
        return max(1, cover)
    grown = cap if held is None else min(cap, held)
    return max(1, cover, grown)


@dataclass(frozen=True)
class StepPlan:
    """One producer step. ``keys`` and ``chunk`` are ``engine.step``'s arguments."""

    keys: dict[str, frozenset]  # player_id -> held keys
    chunk: dict[str, int]  # player_id -> frames wanted
    stepping: tuple[str, ...]  # player ids (cameras) in this step (first come, first served)
    cut: tuple[str, ...]  # of those, cameras whose buffered frames the answer replaces
    waiting: tuple[str, ...]  # cameras that need a step but were left out by max_batch

    @property
    def frames(self) -> int:
        return sum(self.chunk.values())


def plan_step(
    sessions: list[Camera],
    *,
    cap: int,
    cover: int = 1,
    max_chunk: int | None = None,
    max_batch: int | None = None,
    max_frames: int | None = None,
    answer_max: int = 1,
) -> StepPlan:
    """Which cameras step next, most urgent first (``sessions``: every seated player's camera;
    a single-player session has one). ``cover``: frames a session shows while one step runs;
    ``answer_max``: the longest answer chunk.

    Answers go first and alone: sessions whose keys changed or that have a text event, plus any
    session whose buffer is empty, in short chunks — a long refill never sits in front of an
    answer. Otherwise refills: sessions down to their low water (two covers), emptiest first,
    each with a full chunk, until ``max_frames`` (at least one session per step). Ties go to
    the session that came first.
    """
    limit = max_chunk or max(cap, cover)
    live = sorted((s for s in sessions if s.status is SessionStatus.LIVE), key=lambda s: s.joined)
    changed = [s for s in live if s.events or s.keys != s.stepped_keys]
    if changed:
        chosen = changed + [s for s in live if not s.buffered and s not in changed]
        budget = None  # answers are never held back
    else:
        low = [s for s in live if len(s.buffered) <= 2 * cover]
        chosen = sorted(low, key=lambda s: (len(s.buffered), s.joined))
        budget = max_frames
    keys: dict[str, frozenset] = {}
    chunk: dict[str, int] = {}
    stepping: list[str] = []
    cut: list[str] = []
    waiting: list[str] = []
    frames = 0
    for session in chosen:
        is_change = bool(session.events) or session.keys != session.stepped_keys
        n = min(
            limit,
            chunk_length(
                session.stepped_keys,
                session.keys,
                bool(session.events),
                cap,
                cover,
                session.held_frames,
            )
            if is_change or not changed
            else max(1, cover),  # a starving session riding along with answers: short too
        )
        if is_change:
            # A chunk's first frame comes out with its last: answers stay short.
            n = min(n, answer_max)
        full = max_batch is not None and len(stepping) >= max_batch
        if full or (budget is not None and stepping and frames + n > budget):
            waiting.append(session.player_id)
            continue
        if is_change and session.buffered:
            cut.append(session.player_id)
        keys[session.player_id] = session.keys
        chunk[session.player_id] = n
        frames += n
        stepping.append(session.player_id)
    return StepPlan(
        keys=keys, chunk=chunk, stepping=tuple(stepping), cut=tuple(cut), waiting=tuple(waiting)
    )


@dataclass
class ChunkController:
    """Sets the chunk cap from how busy the producer is.

    ``utilisation`` is stepping time over wall time, smoothed over about a second. Above
    ``high`` (or when too many ticks find a buffer empty) the cap doubles; below ``low`` it
    halves. ``low`` is under half of ``high`` so halving the cap (about doubling the cost per
    frame) does not bounce straight back up.
    """

    max_chunk: int
    cap: int = 1
    high: float = 0.7
    low: float = 0.3
    smoothing: float = 0.1  # weight of the newest tick
    cooldown_ticks: int = 24  # ticks between two changes, so the average can settle
    late_limit: float = 0.2  # share of late ticks that counts as falling behind
    utilisation: float = 0.0
    late_rate: float = 0.0
    _since_change: int = 0
    _samples: int = 0

    def observe(self, *, busy_s: float, period_s: float, late: bool) -> int:
        sample = busy_s / period_s if period_s > 0 else 1.0
        self._samples += 1
        if self._samples == 1:
            self.utilisation = sample  # no history yet: do not average against a made-up zero
        self.utilisation += self.smoothing * (sample - self.utilisation)
        self.late_rate += self.smoothing * (float(late) - self.late_rate)
        self._since_change += 1
        if self._since_change < self.cooldown_ticks:
            return self.cap
        behind = self.late_rate > self.late_limit or self.utilisation > self.high
        if behind and self.cap < self.max_chunk:
            self.cap = min(self.max_chunk, self.cap * 2)
            self._since_change = 0
        elif self.utilisation < self.low and self.cap > 1:
            self.cap = max(1, self.cap // 2)
            self._since_change = 0
        return self.cap
