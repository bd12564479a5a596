"""Narrative benchmark: story pairs and character replies per second at 1, 4 and 8 concurrent
sessions asking without pause (the flood) and replies at 8 sessions at a human pace, and the
frame rate of 8 live players while they chat both ways beside the same without chat, in one run.

    .venv/bin/python bench/narrative.py [--seconds 20] [--sessions 1 4 8] [--backend ...]
        [--no-screen] [--stories N]

Every generated line (each partial of a reply too) passes moderation's play screening, as in
the worker (``--no-screen``: none).

Part 1 first times a pick alone (``pick_waits``): its line and next pair written one after the
other, beside the same with the line written beside the pair (``Narrator.offer`` with the
pick). Then it drives the narrator through the worker's own
generation runner (``NARRATIVE_LM_CONCURRENCY`` jobs at once, never two of a session), each
session asking for its next pair (after picking the first option: the pick's line too, as the
worker asks) or reply as soon as the last one came back; for replies also the time to the
model's first piece. Characters keep their whole memory, as the worker keeps it; each one's
first reply (its card read cold, every session at once) is timed apart, before the window. Then
the paced run: replies at the largest session count, each session's next line an exponential gap
of mean ``PACE_S`` (6 s: reading the reply, typing the next line) after its reply came, for
``PACED_LONGER`` times the window. Per cell, what the embedded model's decode loop did
(``DecoderWatch``): prompt tokens per request reused from its sequence and evaluated, long
reads, tokens generated, tokens/s. Last, one long talk alone (``long_talk``: 40 exchanges, the
world changing every 5): what the model read per turn, the memory's folds, the reply time.

Part 2 runs a real InferenceWorker in this process (in-memory channel layer and placement, the
shipped world model) with 8 character sessions (``--stories N``: the last N story worlds, whose
players pick an option where the others say a line and wait for the next pair, its pick's line
with it, where they wait for the reply), each player holding a key: N seconds without
chat, N seconds in which every player says a line, waits for the whole reply and says the next,
2N seconds in which each says its next line a paced gap after the reply, then N seconds without
chat again; per player the frame rate of each window and the replies, with the first partial
line and the whole reply p50/p99 of each chat window and the decode loop's account. The tables
are printed before the worker is stopped. If the worker's run() ends mid-run the bench exits
with its exception instead of waiting; a stop that hangs is reported and cut short; a stage that
makes no progress within its bound (``Watchdog``) prints every thread's stack and every asyncio
task's, and the bench exits with status 3.

Part 1 prints markdown tables, part 2 one per player (as bench/play.py does). Medians and p99s
only: nothing here is asserted. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.narrative_live import Watchdog, live_players, print_frames, run_bounded  # noqa: E402
from bench.narrative_throughput import PLAYERS, FirstPiece, print_throughput  # noqa: E402
from inference.narrative import wording  # noqa: E402
from inference.narrative.backends import NarrativeConfig  # noqa: E402
from inference.narrative.narrator import Narrator  # noqa: E402
from inference.world import text as text_encoder  # noqa: E402


def play_screen() -> Callable[[str], bool]:
    """The screening the worker passes its narrator (``sessions.worker_client``): every partial
    and final line through moderation's blocklist and MiniLM layers, on the generation threads."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gallery.settings")
    os.environ.setdefault("DEBUG", "true")  # the embedded defaults: no production secrets needed
    django.setup()
    from sessions.worker_client import screen_generated_line

    return screen_generated_line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--sessions",
        type=int,
        nargs="+",
        default=[1, 4, 8],
        help="part 1's flood cells (the paced run takes the largest)",
    )
    parser.add_argument("--backend", choices=("embedded", "openai", "off"))
    parser.add_argument(
        "--no-screen",
        action="store_true",
        help="skip moderation's screening of each generated line (the worker always screens)",
    )
    parser.add_argument("--skip-frames", action="store_true", help="part 1 only")
    parser.add_argument("--frames-only", action="store_true", help="part 2 only")
    parser.add_argument(
        "--stories",
        type=int,
        default=0,
        choices=range(PLAYERS + 1),
        metavar=f"0-{PLAYERS}",
        help="part 2: this many of the 8 live sessions are story worlds, picking as they chat",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    config = NarrativeConfig.from_env()
    if args.backend:
        config = replace(config, backend=args.backend)
    screen = wording.allow_all if args.no_screen else play_screen()
    narrator = Narrator.from_config(config, screen=screen)
    if narrator.chat_lm is not None:
        narrator.chat_lm = FirstPiece(narrator.chat_lm)  # part 1 times the replies' first piece
    narrator.warm_up()
    text_encoder.embed(["warm up"])
    screening = "none" if args.no_screen else "moderation's play screening, as the worker's"
    print(f"narrator: {narrator.backends}; {args.seconds:.0f} s per cell; screening: {screening}")
    if not args.frames_only:
        print_throughput(narrator, args.seconds, tuple(args.sessions))
    if not args.skip_frames:
        watchdog = Watchdog()
        report = lambda result: print_frames(result, args.seconds)  # noqa: E731
        players = live_players(narrator, args.seconds, watchdog, report, args.stories)
        _, left = run_bounded(players, watchdog)
        watchdog.stop()
        if left:  # the tables are out; exiting would wait for these threads without a bound
            print(f"warning: the worker left threads running after its stop: {left}",
                  file=sys.stderr, flush=True)  # fmt: skip
            sys.stdout.flush()
            os._exit(4)


if __name__ == "__main__":
    main()
