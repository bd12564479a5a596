"""A contact sheet of the frame decoder beside its teacher and the old atlas renderer: the same
places over a day (shadows turning), at night and in rain and snow.

    python -m inference.training.decoder_sheet [--out var/decoder_sheet.png] [--weights DIR]

Each place is three rows: the old atlas renderer (the world model's `Renderer`, 128 pixels
upscaled), the decoder (what is served now, 192 pixels) and the teacher it learned from.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

from inference.training.config import ROOT
from inference.training.simulator.teacher import out_side, render_rich
from inference.training.simulator.teacher_sheet import COLUMNS, places, scene_of
from inference.world import spec
from inference.world.decoder import FrameDecoder
from inference.world.model import WorldModel

WEIGHTS = ROOT / "inference" / "weights"


def _tensors(scene) -> list[torch.Tensor]:
    return [
        torch.from_numpy(np.asarray(a))
        for a in (scene.tokens, scene.offset, scene.weather, scene.minute, scene.phase)
    ] + [torch.from_numpy(scene.sprites)]


def _things(layer) -> tuple:
    slots, table, lights = layer
    return (torch.from_numpy(slots), torch.from_numpy(table), torch.from_numpy(lights))


def contact_sheet(path: Path, weights: Path = WEIGHTS) -> None:
    decoder = FrameDecoder.load(weights)
    atlas = WorldModel.from_file(weights / "world_model.safetensors").renderer.eval()
    atlas.freeze()
    f, pad, head, label_w = out_side(spec.FRAME), 4, 16, 64
    rows = [(name, kind) for name, *_ in places() for kind in ("old atlas", "decoder", "teacher")]
    width = label_w + len(COLUMNS) * (f + pad)
    sheet = Image.new("RGB", (width, head + len(rows) * (f + pad)), "white")
    draw = ImageDraw.Draw(sheet)
    for c, (label, _, _) in enumerate(COLUMNS):
        draw.text((label_w + c * (f + pad), 2), label, fill="black")
    r = 0
    for name, tokens, sprites, things in places():
        for kind in ("old atlas", "decoder", "teacher"):
            y = head + r * (f + pad)
            draw.text((2, y + f // 2 - 12), name, fill="black")
            draw.text((2, y + f // 2), kind, fill="black")
            for c, (_, minute, weather) in enumerate(COLUMNS):
                scene, layer = scene_of(tokens, sprites, things, minute, weather)
                if kind == "teacher":
                    img = render_rich(scene, layer)[0]
                elif kind == "decoder":
                    img = decoder.frames(*_tensors(scene), things=_things(layer)).numpy()[0]
                else:
                    old = atlas.frames(*_tensors(scene), things=_things(layer)).numpy()[0]
                    img = np.asarray(Image.fromarray(old).resize((f, f), Image.NEAREST))
                sheet.paste(Image.fromarray(img), (label_w + c * (f + pad), y))
            r += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "decoder_sheet.png")
    parser.add_argument("--weights", type=Path, default=WEIGHTS)
    args = parser.parse_args(argv)
    contact_sheet(args.out, args.weights)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
