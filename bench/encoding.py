"""Frame encodings side by side: bytes per frame, encode time and what survives of the picture.

    .venv/bin/python bench/encoding.py [--frames 48]

The frames are the frame decoder's, of worlds the engine makes from the demo prompts (192 x 192
served). For each encoding: the median bytes per frame, the median encode time of one frame on
this thread, PSNR against the raw frame, and PSNR on the edges alone (the 10% of pixels with the
steepest gradient: where JPEG rings and chroma subsampling smears colour, which a frame
magnified 3x on the play page shows).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import simplejpeg
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inference.world.engine import WorldEngine  # noqa: E402

PROMPTS = (
    "a lighthouse on a rocky coast at dusk",
    "a village of windmills by a lake",
    "a snowy forest at night",
    "a volcanic wasteland",
    "a meadow in the rain",
    "a cherry blossom garden at noon",
)


def frames(n: int) -> list[np.ndarray]:
    engine = WorldEngine.load()
    out = []
    for i, prompt in enumerate(PROMPTS):
        world = engine.create_world(prompt=prompt, seed=100 + i)
        player = engine.add_player(world)
        per = max(1, n // len(PROMPTS))
        for k in range(per):
            keys = {player: frozenset("d" if k % 2 else "s")}
            out.append(engine.step(keys, {player: 1})[player][0])
    return out


def _jpeg(q: int, sub: str):
    return lambda f: simplejpeg.encode_jpeg(f, quality=q, colorspace="RGB", colorsubsampling=sub)


def _jpeg_decode(b: bytes) -> np.ndarray:
    return simplejpeg.decode_jpeg(b, colorspace="RGB")


def _pil(fmt: str, **kw):
    def enc(f):
        buf = io.BytesIO()
        Image.fromarray(f).save(buf, fmt, **kw)
        return buf.getvalue()

    return enc


def _pil_decode(b: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(b)).convert("RGB"))


ENCODINGS = {
    "JPEG q80 4:2:0 (before)": (_jpeg(80, "420"), _jpeg_decode),
    "JPEG q80 4:4:4": (_jpeg(80, "444"), _jpeg_decode),
    "JPEG q90 4:4:4": (_jpeg(90, "444"), _jpeg_decode),
    "JPEG q95 4:4:4": (_jpeg(95, "444"), _jpeg_decode),
    "WebP q90": (_pil("WEBP", quality=90, method=0), _pil_decode),
    "WebP lossless": (_pil("WEBP", lossless=True, quality=0, method=0), _pil_decode),
    "PNG": (_pil("PNG", compress_level=1), _pil_decode),
}


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def edges(f: np.ndarray) -> np.ndarray:
    g = f.astype(np.float64).mean(2)
    mag = np.abs(np.diff(g, axis=0, append=g[-1:])) + np.abs(np.diff(g, axis=1, append=g[:, -1:]))
    return mag >= np.quantile(mag, 0.9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=48)
    args = parser.parse_args()
    shots = frames(args.frames)
    side = shots[0].shape[0]
    print(f"{len(shots)} frames, {side} x {side}, one thread")
    print("| encoding | bytes/frame | encode ms | PSNR dB | edge PSNR dB |")
    print("| --- | --- | --- | --- | --- |")
    for name, (enc, dec) in ENCODINGS.items():
        sizes, times, ps, eps = [], [], [], []
        for f in shots:
            t = time.perf_counter()
            b = enc(f)
            times.append(time.perf_counter() - t)
            back = dec(b)
            sizes.append(len(b))
            ps.append(psnr(f, back))
            m = edges(f)
            eps.append(psnr(f[m], back[m]))
        med = statistics.median
        print(
            f"| {name} | {med(sizes):.0f} | {med(times) * 1000:.2f} | "
            f"{med(ps):.1f} | {med(eps):.1f} |"
        )


if __name__ == "__main__":
    main()
