"""Recordings on the real engine: a run replays to the frames its players were sent, byte for
byte; a fork starts from the world as it was at a frame; bad recordings are refused."""

import random

import pytest

from inference.serving import recording as rec
from inference.serving.core import EngineCore
from inference.serving.frames import decode_header, frame_jpeg, jpeg
from inference.serving.session import Camera, LiveSession
from inference.world import journal as jn
from inference.world.state import state_from_bytes

KEYS = [
    frozenset(),
    frozenset({"d"}),
    frozenset({"s"}),
    frozenset({"a", "w"}),
    frozenset({"s", "d"}),
]
EVENTS = ["it starts to snow", "a fox runs past", "a lantern appears", "night falls"]


def _session(core, sid, players, prompt="a sunny meadow with a pond", seed=5):
    session = LiveSession(session_id=sid, prompt=prompt, seed=seed)
    session.recorder = rec.Recorder(sid, worker="w1", weights="test", fps=core.fps)
    for slot in range(players):
        session.cameras[slot] = Camera(sid, slot, name=f"P{slot}", joined=slot)
    core.sessions[sid] = session
    core.create_world(session)
    core.go_live(session, 0.0)
    return session


def _play(core, sessions, ticks, seed, join_at=None, sent=None):
    """Drive the core as the worker does: keys change now and then (cuts drop buffered frames),
    events arrive, a player joins; -> (session, slot) -> JPEGs sent, in order."""
    rng = random.Random(seed)
    sent = sent if sent is not None else {}
    now = 0.0
    for tick in range(ticks):
        now += 1 / core.fps
        for session in sessions:
            for camera in session.cameras.values():
                if rng.random() < 0.08:
                    camera.keys, camera.keys_seq = rng.choice(KEYS), camera.keys_seq + 1
                if rng.random() < 0.01:
                    camera.events.append((camera.keys_seq + 1, rng.choice(EVENTS)))
        if join_at is not None and tick == join_at:
            session = sessions[0]
            camera = session.cameras[1] = Camera(session.session_id, 1, name="Late", joined=9)
            core.add_camera(session, camera)
            core.camera_live(camera, now)
        if tick % 2 == 0:
            batch = core.schedule()
            if batch is not None:
                out = core.collect(batch, core.execute(batch), now, took=0.004)
                for camera, data in out.frames:
                    sent.setdefault((camera.session_id, camera.slot), []).append(data)
        for camera, data in core.pace(now).frames:
            sent.setdefault((camera.session_id, camera.slot), []).append(data)
    return sent


def _recording(core, session, now=1000.0):
    parts = [data for _, data in session.recorder_parts]
    parts.append(core.recording_part(session, now, final=True)[1])
    return rec.read_recording(parts)


@pytest.fixture
def core(engine):
    core = EngineCore(engine, fps=24.0)
    yield core
    engine.stop_terrain()
    for session in list(core.sessions.values()):
        if session.world_id:
            core.drop_world(session.world_id)


def _flush(core, sessions, now):
    for session in sessions:
        if not hasattr(session, "recorder_parts"):
            session.recorder_parts = []
        session.recorder_parts.append(core.recording_part(session, now))


def test_a_shared_run_replays_to_the_frames_sent_byte_for_byte(core, engine):
    # Two worlds stepped in the same batches, terrain grown on its own thread (players held
    # at late terrain), keys cut buffered frames, events, a player joining midway, and a
    # checkpoint: the replay of each camera is exactly what that player was sent.
    engine.start_terrain()
    shared = _session(core, "shared", players=1)
    other = _session(core, "other", players=1, prompt="a snowy forest at night", seed=9)
    sent = _play(core, [shared, other], ticks=150, seed=1, join_at=40)
    _flush(core, [shared, other], now=10.0)
    core.record_checkpoint(shared, now=11.0)
    _play(core, [shared, other], ticks=150, seed=2, sent=sent)
    recordings = {s.session_id: _recording(core, s) for s in (shared, other)}
    assert {"segment", "checkpoint", "drop", "world", "event"} <= {
        e[0] for e in recordings["shared"].entries
    }
    for session in (shared, other):
        recording = recordings[session.session_id]
        assert recording.complete
        replay = rec.Replay(engine.replayer(), recording)
        for slot in session.cameras:
            live = [frame_jpeg(d) for d in sent[(session.session_id, slot)]]
            assert [decode_header(d)[2] for d in sent[(session.session_id, slot)]] == list(
                range(len(live))
            )
            again = [jpeg(f, core.jpeg_quality) for f in replay.frames(slot)]
            assert recording.cameras[slot].frames == len(live) > 100
            assert again == live, f"{session.session_id} camera {slot} differs"


def test_events_are_marked_at_the_frame_they_happened(core, engine):
    session = _session(core, "marks", players=1)
    session.cameras[0].events.append((1, "a lantern appears"))
    sent = _play(core, [session], ticks=60, seed=3)
    session.recorder_parts = []
    recording = _recording(core, session)
    (mark,) = [m for m in recording.marks if m["kind"] == "event"]
    assert mark["text"] == "a lantern appears" and mark["by"] == "P0"
    assert 0 <= mark["frame"] <= 8
    assert recording.frames == len(sent[("marks", 0)])


def test_a_fork_starts_from_the_world_at_its_frame(core, engine):
    # keys change often, so cuts drop frames: the frame numbers are those the player saw
    session = _session(core, "forked", players=1)
    _play(core, [session], ticks=160, seed=4)
    session.recorder_parts = []
    recording = _recording(core, session)
    assert any(e[0] == "drop" for e in recording.entries)
    frames = list(rec.Replay(engine.replayer(), recording).frames(0))
    for n in (0, 7, len(frames) // 2, len(frames) - 1):
        world, player, _ = rec.Replay(engine.replayer(), recording).state_at(n, 0)
        state = state_from_bytes(world)
        (avatar,) = [p for p in state.players if p.player_id == player]
        # the world the fork starts from draws that very frame
        fork = LiveSession(session_id=f"fork{n}", prompt=session.prompt, seed=session.seed)
        fork.fork = ("recordings/forked", n, 0)
        fork.cameras[0] = Camera(fork.session_id, 0, name="Forker")
        core.sessions[fork.session_id] = fork
        core.create_world(fork, kept=world)
        moved = engine.worlds[fork.world_id].players[0]
        assert (moved.x, moved.y, moved.slot) == (avatar.x, avatar.y, 0)
        assert fork.world_id != session.world_id and moved.player_id != player
        redrawn = engine._render([engine._scene(engine.worlds[fork.world_id], moved)])[0]
        assert (redrawn == frames[n]).all(), f"frame {n}"
    with pytest.raises(rec.RecordingError):
        rec.Replay(engine.replayer(), recording).state_at(len(frames), 0)


@pytest.mark.parametrize(
    "data",
    [b"", b"PXRC", b"PXRCnot zlib", b"GIF89a", rec.MAGIC + __import__("zlib").compress(b"[1, 2]")],
)
def test_unreadable_parts_are_refused(data):
    with pytest.raises(rec.RecordingError):
        rec.read_recording([data])


def test_a_journal_entry_round_trips_and_garbage_is_refused():
    entries = [
        jn.Chunk(-1, 2, bytes(range(256))),
        jn.Join("p", 3),
        jn.Leave("p"),
        jn.Change(1, -1, 2, -1, ("lantern", "paper boat"), "p"),
        jn.Advance((("p", 1, -1, 4),), ((2, "p"),)),
    ]
    assert [jn.from_json(jn.to_json(e)) for e in entries] == entries
    for bad in (["nope", 1], ["chunk", "x"], 7, ["advance", [[1]]]):
        with pytest.raises(jn.JournalError):
            jn.from_json(bad)


def test_a_recording_is_complete_only_once_every_part_before_the_last_is_stored():
    """Parts are stored from threads of their own: the last can land before the one before it,
    and a recording read then must not count as complete (its frame counts would be short)."""
    head = {"session_id": "s", "worker": "w1", "weights": "", "fps": 24.0}
    world = ["segment", "", {}, {}]

    def part(n, final=False, worker="w1"):
        return rec.pack_part({**head, "worker": worker, "part": n, "final": final}, [world])

    assert rec.read_recording([part(0), part(1), part(2, final=True)]).complete
    assert not rec.read_recording([part(0), part(2, final=True)]).complete  # part 1 still coming
    assert not rec.read_recording([part(0), part(1)]).complete  # the last not yet written
    # a failover: the second worker numbers its own parts from 0
    assert rec.read_recording(
        [part(0), part(1), part(0, worker="w2"), part(1, True, "w2")]
    ).complete
