"""A session's snapshot: what failover, handover and reconnects restore a session from.

``u32`` length + JSON metadata (ids, each seated player's camera and counters, prompt, the story
or dialogue, the last answers to world events) + the engine's exact world bytes (every avatar's
position in it). Placement stores it (Redis or memory); the worker writes one every couple of
seconds and whenever a story or a pause must survive a crash.
"""

import json
import struct
from collections import deque

from inference.narrative.state import from_meta
from inference.serving.messages import Event
from inference.serving.session import EVENTS_REPLAYED, Camera, LiveSession, SessionStatus

SNAPSHOT_FORMAT = 2
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
        "prompt": session.prompt,
        "seed": session.seed,
        "world_title": session.world_title,
        "persist_key": session.persist_key,
        "cameras": [
            {
                "slot": c.slot,
                "name": c.name,
                "player_id": c.player_id,
                "paused": c.status is SessionStatus.PAUSED,
                "frame_no": c.frame_no,
                "applied_seq": c.applied_seq,
                "state_seq": c.state_seq,
            }
            for c in session.cameras.values()
        ],
        # Story so far, the pair on offer, dialogue turn: failover and handover keep them.
        "narrative": session.narrative.to_meta() if session.narrative else None,
        "last_pick": session.last_pick,
        # Replayed to whoever comes: a failover must not empty the events list of a reload.
        "events": [event.to_message() for event in session.recent_events],
    }


def apply_meta(session: LiveSession, meta: dict) -> None:
    """Counters, seats and story from a snapshot; the world and player ids are the engine's."""
    session.prompt = meta.get("prompt", session.prompt)
    session.seed = _int(meta.get("seed"))
    session.world_title = meta.get("world_title", session.world_title)
    session.persist_key = meta.get("persist_key") or session.persist_key
    for item in meta.get("cameras") or []:
        if not isinstance(item, dict):
            continue
        slot = _int(item.get("slot"))
        # A player who attached while the world was restoring is newer than the snapshot.
        camera = session.cameras.get(slot) or Camera(session.session_id, slot)
        session.cameras[slot] = camera
        camera.name = camera.name or str(item.get("name") or "")
        camera.player_id = str(item.get("player_id") or "")
        if item.get("paused") and camera.status is SessionStatus.STARTING:
            camera.status = SessionStatus.PAUSED
        camera.frame_no = _int(item.get("frame_no"))
        camera.applied_seq = _int(item.get("applied_seq"))
        # Keys that arrived while the world was restoring are newer than the snapshot: keep them.
        camera.keys_seq = max(camera.keys_seq, camera.applied_seq)
        camera.state_seq = max(camera.applied_seq, _int(item.get("state_seq")))
        camera.restored = True
        camera.stepped_keys = None
    session.narrative = from_meta(meta.get("narrative"))
    session.last_pick = str(meta.get("last_pick") or "")
    events = meta.get("events") if isinstance(meta.get("events"), list) else []
    session.recent_events = deque(
        (Event.from_message(e) for e in events if isinstance(e, dict)), maxlen=EVENTS_REPLAYED
    )


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
