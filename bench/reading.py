"""How long the engine takes to read a text: a world's description and a player's event.

    python -m bench.reading [--n 60] [--threads 1]

Each text is new to the process (the embedding cache misses, as a player's next line does):
eval-split phrasings of the phrasing banks. Prints the median and p90 per kind, in ms, and
how many MiniLM embeddings one read makes on average. Run it on two trees to compare them.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from inference.training.simulator import phrasing
from inference.world import text as text_encoder
from inference.world.engine import UnsupportedEvent, WorldEngine


def _timed(read, texts: list[str]) -> tuple[list[float], float]:
    took, embedded = [], 0
    for text in texts:
        before = len(text_encoder._cache)
        began = time.perf_counter()
        try:
            read(text)
        except UnsupportedEvent:
            pass
        took.append((time.perf_counter() - began) * 1000)
        embedded += len(text_encoder._cache) - before
    return took, embedded / len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=60, help="texts of each kind")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    engine = WorldEngine.load()
    rng = np.random.default_rng(2026)
    prompts = [phrasing.world_prompt(rng, "eval")[0] for _ in range(args.n)]
    events = [phrasing.event_text(rng, "eval")[0] for _ in range(args.n)]
    engine.read_prompt("a meadow")  # the first read loads what it needs
    engine.read_event("it starts to rain")
    text_encoder._CACHE_MAX = 10**6  # count every embedding a read makes
    print(f"| kind | texts | median ms | p90 ms | embeddings per read | threads {args.threads} |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind, read, texts in (
        ("description", engine.read_prompt, prompts),
        ("event", engine.read_event, events),
    ):
        took, embedded = _timed(read, texts)
        median, p90 = np.percentile(took, [50, 90])
        print(f"| {kind} | {len(texts)} | {median:.1f} | {p90:.1f} | {embedded:.0f} | |")


if __name__ == "__main__":
    main()
