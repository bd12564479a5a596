"""The play page of one world over a day and in weather, at a desktop and a phone size: what a
player sees at noon, late afternoon (long shadows), dusk, night, in rain and in snow. Run it on
two checkouts and `--compare` puts their shots side by side (issue 47: the atlas renderer
against the frame decoder).

    python -m tests.browser.day_screenshots [--out var/day] [--world "Pine Valley Run"]
    python -m tests.browser.day_screenshots --compare OLD_DIR NEW_DIR --out var/day-compare \
        [--labels "the atlas renderer" "the frame decoder"]

Starts its own embedded server like `make screenshots` (tests/browser/screenshots.py).
"""

import argparse
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageDraw

from tests.browser.live_server import (
    ROOT,
    chromium_path,
    free_port,
    launch_chromium,
    start_daphne,
    stop,
    wait_until_up,
)
from tests.browser.screenshots import SIZES, manage, server_env, wait_for

# (name, the event a player types or None, then how long to wait in ms), in order. The day runs
# on at 2.4 minutes a second of play, so after noon 110 s of waiting is the late afternoon.
STATES = (
    ("dawn", "dawn breaks", 2500),
    ("noon", "it is noon", 2500),
    ("afternoon", None, 110_000),
    ("dusk", "dusk falls", 2500),
    ("night", "night falls", 2500),
    ("rain", "it is noon and it starts to rain", 2500),
    ("snow", "it starts to snow", 2500),
)
FIND_SLUG = """
from worlds.models import World
print(World.objects.get(title={title!r}).slug)
"""


def shoot(out: Path, title: str) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="parallax-day-") as tmp:
        env = server_env(Path(tmp))
        manage(env, "migrate", "--noinput")
        manage(env, "load_demo")
        slug = manage(env, "shell", "-c", FIND_SLUG.format(title=title)).strip().splitlines()[-1]
        port = free_port()
        server = start_daphne(env, port)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(server, base + "/api/categories/")
            with sync_playwright() as p:
                browser = launch_chromium(p)
                for size, options in SIZES.items():
                    context = browser.new_context(**options)
                    page = context.new_page()
                    page.goto(f"{base}/play/{slug}/")
                    wait_for(page, "#play[data-frames]", "the world's first frame")
                    for name, text, wait_ms in STATES:
                        if text:
                            page.fill("#prompt-text", text)
                            page.keyboard.press("Enter")
                        page.wait_for_timeout(wait_ms)  # the answer, then frames of the change
                        target = out / f"{size}-{name}.png"
                        page.screenshot(path=str(target))
                        print(f"  {target}", flush=True)
                    page.click("#end-session")
                    page.wait_for_timeout(500)
                    context.close()
                browser.close()
        finally:
            stop(server)


def compare(old: Path, new: Path, out: Path, labels: tuple[str, str]) -> None:
    """One sheet per size: a row per state, the old shot left and the new one right."""
    for size in SIZES:
        shots = [
            (name, old / f"{size}-{name}.png", new / f"{size}-{name}.png") for name, *_ in STATES
        ]
        shots = [s for s in shots if s[1].exists() and s[2].exists()]
        if not shots:
            continue
        w, h = Image.open(shots[0][1]).size
        scale = 0.5 if size == "desktop" else 0.6
        sw, sh = int(w * scale), int(h * scale)
        sheet = Image.new("RGB", (2 * sw + 30, len(shots) * (sh + 24) + 24), "white")
        draw = ImageDraw.Draw(sheet)
        draw.text((10, 4), f"before: {labels[0]}", fill="black")
        draw.text((sw + 20, 4), f"after: {labels[1]}", fill="black")
        for i, (name, a, b) in enumerate(shots):
            y = 24 + i * (sh + 24)
            draw.text((10, y), name, fill="black")
            sheet.paste(Image.open(a).convert("RGB").resize((sw, sh)), (10, y + 14))
            sheet.paste(Image.open(b).convert("RGB").resize((sw, sh)), (sw + 20, y + 14))
        target = out / f"{size}-before-after.png"
        sheet.save(target)
        print(f"  {target}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "day")
    parser.add_argument("--world", default="Pine Valley Run")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    parser.add_argument(
        "--labels",
        nargs=2,
        default=("the atlas renderer", "the frame decoder"),
        metavar=("OLD", "NEW"),
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.compare:
        compare(*args.compare, args.out, args.labels)
        return 0
    if not chromium_path():
        print("Chromium is not installed: apt-get install -y chromium", file=sys.stderr)
        return 2
    shoot(args.out, args.world)
    return 0


if __name__ == "__main__":
    sys.exit(main())
