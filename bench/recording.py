"""Recordings: what recording costs the frame path, how fast a run exports, how much it stores.

    .venv/bin/python bench/recording.py [--sessions 4] [--seconds 60] [--rounds 5]

1. Overhead: the worker's core (`EngineCore`: plan, step, JPEG, pace) drives ``--sessions``
   one-player worlds for ``--seconds`` of play (keys change every second, an event now and
   then), with and without a recorder, the parts taken every 5 s of play as the worker does
   (journal, zlib, and a checkpoint a minute). CPU seconds of this process per frame sent,
   on one torch thread as the worker runs; rounds alternate, medians side by side.
2. Export: the recording of one session replayed and encoded to MP4 (H.264 through PyAV, as
   `sessions.recording_videos.export_video` does, 4x scaled): x real time on one core.
3. Storage: bytes of the recording's parts per minute of play.
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inference.serving import recording as rec  # noqa: E402
from inference.serving.core import EngineCore  # noqa: E402
from inference.serving.session import Camera, LiveSession  # noqa: E402
from inference.world.engine import WorldEngine  # noqa: E402

PROMPTS = [
    "a quiet meadow",
    "a snowy forest at night",
    "a desert in the rain",
    "city streets at dusk",
]
KEYS = [frozenset(k) for k in ("d", "s", "a", "w", "sd", "wa", "")]
EVENTS = ["it starts to snow", "a fox runs past", "a lantern appears", "night falls"]
FPS = 24.0


def play(engine, sessions: int, seconds: float, record: bool, seed: int) -> tuple[float, int, dict]:
    """-> (CPU seconds per frame sent, frames sent, {session: parts})."""
    core = EngineCore(engine, fps=FPS)
    rng = random.Random(seed)
    lives = []
    for i in range(sessions):
        live = LiveSession(f"s{i}", prompt=PROMPTS[i % len(PROMPTS)], seed=100 + i)
        if record:
            live.recorder = rec.Recorder(live.session_id, worker="bench", weights="", fps=FPS)
        live.cameras[0] = Camera(live.session_id, 0, name="P")
        core.sessions[live.session_id] = live
        core.create_world(live)
        core.go_live(live, 0.0)
        lives.append(live)
    parts: dict[str, list[bytes]] = {s.session_id: [] for s in lives}
    now, sent = 0.0, 0
    started = time.process_time()
    for tick in range(int(seconds * FPS)):
        now += 1 / FPS
        for live in lives:
            camera = live.cameras[0]
            if tick % int(FPS) == 0:
                camera.keys, camera.keys_seq = rng.choice(KEYS), camera.keys_seq + 1
            if rng.random() < 0.002:
                camera.events.append((camera.keys_seq, rng.choice(EVENTS)))
        if tick % 4 == 0 and (batch := core.schedule()) is not None:
            sent += len(core.collect(batch, core.execute(batch), now, took=0.004).frames)
        sent += len(core.pace(now).frames)
        for live in lives:
            if live.recorder is not None and live.recorder.due(now):
                if now - live.recorder.last_checkpoint >= rec.CHECKPOINT_EVERY_S:
                    core.record_checkpoint(live, now)
                parts[live.session_id].append(core.recording_part(live, now)[1])
    for live in lives:
        if live.recorder is not None:
            parts[live.session_id].append(core.recording_part(live, now, final=True)[1])
    took = time.process_time() - started
    for live in lives:
        core.drop_world(live.world_id)
    return took / max(1, sent), sent, parts


def export(engine, parts: list[bytes]) -> tuple[float, float, int]:
    """-> (seconds to replay and encode, seconds of play, MP4 bytes) for the lead camera."""
    import av
    import numpy as np

    recording = rec.read_recording(parts)
    started = time.perf_counter()
    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as box:
        stream = box.add_stream("libx264", rate=int(FPS))
        stream.width = stream.height = 512
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "20", "preset": "veryfast"}
        for frame in rec.Replay(engine.replayer(), recording).frames():
            big = np.repeat(np.repeat(frame, 4, 0), 4, 1)
            for packet in stream.encode(av.VideoFrame.from_ndarray(big, "rgb24")):
                box.mux(packet)
        for packet in stream.encode():
            box.mux(packet)
    return time.perf_counter() - started, recording.duration_s, len(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    engine = WorldEngine.load()
    play(engine, args.sessions, 2.0, True, 0)  # warm up
    without, with_ = [], []
    parts = {}
    for r in range(args.rounds):
        for record in (False, True) if r % 2 == 0 else (True, False):
            per_frame, sent, made = play(engine, args.sessions, args.seconds, record, r)
            (with_ if record else without).append(per_frame)
            if record:
                parts = made
    a, b = statistics.median(without), statistics.median(with_)
    print(
        f"\n## Recording overhead ({args.sessions} sessions, {args.seconds:.0f} s of play, "
        f"{args.rounds} rounds, 1 torch thread)\n"
    )
    print("| | CPU ms per frame sent (median) | runs |")
    print("|---|---:|---|")
    print(f"| without recording | {a * 1e3:.3f} | {', '.join(f'{x * 1e3:.3f}' for x in without)} |")
    print(f"| with recording | {b * 1e3:.3f} | {', '.join(f'{x * 1e3:.3f}' for x in with_)} |")
    print(f"| overhead | {100 * (b / a - 1):+.1f}% | goal <= 5% |")

    lead = next(iter(parts.values()))
    times = [export(engine, lead) for _ in range(3)]
    took = statistics.median(t for t, _, _ in times)
    duration, size = times[0][1], times[0][2]
    print("\n## Export (lead camera, 512x512 H.264 CRF 20, one core)\n")
    print("| seconds of play | export seconds (median of 3) | x real time | MP4 KB per minute |")
    print("|---:|---:|---:|---:|")
    per_minute = size / 1024 / (duration / 60)
    print(f"| {duration:.1f} | {took:.2f} | {duration / took:.1f}x | {per_minute:.0f} |")

    print("\n## Storage (recording parts, per session)\n")
    print("| session | parts | KB | KB per minute of play |")
    print("|---|---:|---:|---:|")
    for sid, made in parts.items():
        kb = sum(len(p) for p in made) / 1024
        print(f"| {sid} | {len(made)} | {kb:.0f} | {kb / (args.seconds / 60):.0f} |")


if __name__ == "__main__":
    main()
