"""A session's snapshot: what failover, handover and reconnects restore a session from.

``u32`` length + JSON metadata (ids, counters, prompt, the story or dialogue) + the engine's
exact world bytes. Placement stores it (Redis or memory); the worker writes one every couple of
seconds and whenever a story or a pause must survive a crash.
"""

import json
import struct

from inference.narrative import engine as narrative
from inference.serving.session import LiveSession

SNAPSHOT_FORMAT = 1
_META_LEN = struct.Struct(">I")


class SnapshotFormatError(ValueError):
    pass


def pack_snapshot(meta: dict, world: bytes) -> bytes:
    head = json.dumps({"format": SNAPSHOT_FORMAT, **meta}).encode()
    return _META_LEN.pack(len(head)) + head + world


def unpack_snapshot(data: bytes) -> tuple[dict, bytes]:
    try:
        (size,) = _META_LEN.unpack_from(data)
        meta = json.loads(data[_META_LEN.size : _META_LEN.size + size])
    except (struct.error, ValueError) as exc:
        raise SnapshotFormatError(f"unreadable session snapshot: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != SNAPSHOT_FORMAT:
        raise SnapshotFormatError("unknown session snapshot format")
    return meta, data[_META_LEN.size + size :]


def session_meta(session: LiveSession) -> dict:
    return {
        "session_id": session.session_id,
        "player_id": session.player_id,
        "prompt": session.prompt,
        "seed": session.seed,
        "world_title": session.world_title,
        "frame_no": session.frame_no,
        "applied_seq": session.applied_seq,
        "state_seq": session.state_seq,
        # Story so far, the pair on offer, dialogue turn: failover and handover keep them.
        "narrative": session.narrative.to_meta() if session.narrative else None,
    }


def apply_meta(session: LiveSession, meta: dict) -> None:
    """Counters and story from a snapshot; the world and player ids are the engine's."""
    session.prompt = meta.get("prompt", session.prompt)
    session.seed = _int(meta.get("seed"))
    session.world_title = meta.get("world_title", session.world_title)
    session.frame_no = _int(meta.get("frame_no"))
    session.applied_seq = _int(meta.get("applied_seq"))
    # Keys that arrived while the world was restoring are newer than the snapshot: keep them.
    session.keys_seq = max(session.keys_seq, session.applied_seq)
    session.state_seq = max(session.applied_seq, _int(meta.get("state_seq")))
    session.restored = True
    session.stepped_keys = None
    session.narrative = narrative.from_meta(meta.get("narrative"))


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
