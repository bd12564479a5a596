"""A worker's part in failover: its heartbeat, reaping dead workers, adopting lost sessions.

Every live worker watches the registry. A worker whose heartbeat is older than
``placement.STALE_S`` is dead: whoever notices first claims its sessions atomically
(``placement.reap``) and places each on a live worker, which restores it from its snapshot.
A worker that stalled past the deadline finds it was reaped (``beat`` returns False): its
sessions belong to others now, so it drops them and registers again. On SIGTERM a worker hands
its sessions over (``handover``) before it leaves.

Every call here blocks on placement (Redis): the worker runs them in a thread, then sends the
resulting messages itself.
"""

import logging

from inference.serving.placement import HEARTBEAT_S, Placement

log = logging.getLogger(__name__)

__all__ = ["HEARTBEAT_S", "Failover"]


class Failover:
    def __init__(self, placement: Placement, *, name: str, device: str, capacity: int) -> None:
        self.placement = placement
        self.name = name
        self.device = device
        self.capacity = capacity
        self._missing_seen: set[str] = set()

    def register(self) -> None:
        self.placement.register_worker(self.name, device=self.device, capacity=self.capacity)

    def deregister(self) -> None:
        self.placement.deregister(self.name)

    def beat(self, *, load: int, fps: float) -> bool:
        """Heartbeat; False when this worker was reaped meanwhile."""
        return self.placement.heartbeat(self.name, load=load, fps=fps)

    def reap(self) -> list[tuple[str, str]]:
        """Claim the sessions of dead workers; -> (session id, worker it goes to)."""
        dead, placed = self.placement.reap()
        if dead:
            log.warning(
                "worker %s: workers %s are dead; re-placing %d sessions",
                self.name,
                dead,
                len(placed),
            )
        return placed

    def handover(self) -> list[tuple[str, str]]:
        """Graceful stop: every session of this worker goes to another; -> where each went."""
        return self.placement.handover(self.name)

    def to_adopt(self, held: set[str]) -> list[str]:
        """Sessions placement gives us but we do not hold (a lost attach message).

        Only those with a snapshot (fresh reservations wait for the player's attach) and only
        when seen missing twice in a row, so an attach already on its way wins.
        """
        assigned = self.placement.sessions_of(self.name)
        missing = {sid for sid in assigned if sid not in held}
        adopt = [
            sid
            for sid in sorted(missing & self._missing_seen)
            if self.placement.load_snapshot(sid) is not None
        ]
        self._missing_seen = missing
        return adopt
