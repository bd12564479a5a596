"""`make screenshots`: PNGs of the main pages at desktop and phone sizes, in var/screenshots/.

Starts its own server: the embedded default (SQLite in a temporary folder, in-memory channel
layer, in-process world model) loaded with the demo catalog and a moderator, on a free port,
with the browser tests' helpers (live_server.py). Then looks at each page in Debian's Chromium
the way a visitor would, waiting for the world's first frame on the play and watch pages.

    python -m tests.browser.screenshots [--out var/screenshots]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.browser.live_server import (
    ROOT,
    chromium_path,
    free_port,
    launch_chromium,
    start_daphne,
    stop,
    wait_until_up,
)

SIZES = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True},
}
MODERATOR = ("moderator", "screenshots-moderator-pw-1")
FIRST_FRAME_MS = 180_000  # the first session loads the world model

# Run by `manage.py shell`: a moderator, one open report, and a world's slug per category.
SETUP = """
import json
from django.contrib.auth.models import Permission
from gallery.models import User
from worlds.models import World
from worlds.moderation.models import Report
from worlds.moderation.services import report_create

name, password = {moderator!r}
mod, _ = User.objects.get_or_create(username=name, defaults={{"display_name": "Moderator"}})
mod.set_password(password)
mod.save()
mod.user_permissions.add(Permission.objects.get(codename="moderate"))
slugs = {{}}
for world in World.objects.filter(status="published").order_by("id"):
    slugs.setdefault(world.category, world.slug)
reporter, _ = User.objects.get_or_create(username="reporter")
if not Report.objects.exists():
    report_create(reporter=reporter, target_type="world", target_id=slugs["games"],
                  reason="spam", note="Looks like an ad to me.")
print(json.dumps(slugs))
"""


def server_env(tmp: Path) -> dict:
    """The embedded default on a throw-away database, whatever the caller's shell points at."""
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "S3_BUCKET"}}
    return env | {
        "DATABASE_URL": f"sqlite:///{tmp / 'screenshots.sqlite3'}",
        "MEDIA_ROOT": str(tmp / "media"),
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "INFERENCE_IN_PROCESS": "true",
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
    }


def manage(env: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"manage.py {args[0]} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def load_catalog(env: dict) -> dict[str, str]:
    print("Loading the demo catalog and rendering its covers…", flush=True)
    manage(env, "migrate", "--noinput")
    manage(env, "load_demo")
    manage(env, "render_covers")
    out = manage(env, "shell", "-c", SETUP.format(moderator=MODERATOR))
    return json.loads(out.strip().splitlines()[-1])


def log_in(context, base: str) -> None:
    page = context.new_page()
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", MODERATOR[0])
    page.fill("#id_password", MODERATOR[1])
    page.click("form.stack-form button[type=submit]")
    page.wait_for_url(f"{base}/")
    page.close()


def wait_for(page, selector: str, what: str) -> None:
    try:
        page.wait_for_selector(selector, state="attached", timeout=FIRST_FRAME_MS)
    except Exception:  # noqa: BLE001 - a missing frame is worth a screenshot too
        print(f"  note: {what} did not appear; the screenshot shows the page without it")


class Shooter:
    def __init__(self, base: str, out: Path, size: str):
        self.base, self.out, self.size = base, out, size
        self.saved: list[Path] = []

    def shoot(self, context, name: str, path: str, *, ready=(), full_page=True) -> None:
        page = context.new_page()
        response = page.goto(self.base + path)
        status = response.status if response is not None else 0
        if status == 404:
            print(f"  note: {path} answers 404 (not built yet); no {self.size}-{name}.png")
            page.close()
            return
        if status >= 400:
            print(f"  warning: {path} answers {status}; the screenshot shows the error page")
        for selector, what in ready:
            wait_for(page, selector, what)
        if not ready:
            page.wait_for_load_state("networkidle")  # covers and fonts
        target = self.out / f"{self.size}-{name}.png"
        page.screenshot(path=str(target), full_page=full_page)
        self.saved.append(target)
        print(f"  {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
        if page.locator("#end-session").count():
            page.click("#end-session")  # frees the world engine's seat for the next page
            page.wait_for_selector("#play[data-state='ended']")
        page.close()


def start_public_session(context, base: str, slug: str) -> tuple[object, str]:
    """A player tab holding a public session's socket open; returns it and the watch URL."""
    player = context.new_page()
    player.goto(f"{base}/w/{slug}/")
    session = player.evaluate(
        """async (slug) => {
            const token = document.cookie.match(/csrftoken=([^;]+)/)[1];
            const response = await fetch("/api/sessions/", {
              method: "POST", credentials: "same-origin",
              headers: {"Content-Type": "application/json", "X-CSRFToken": token},
              body: JSON.stringify({world: slug, public: true}),
            });
            const session = await response.json();
            window.playSocket = new WebSocket(`ws://${location.host}${session.play_socket}`);
            return session;
        }""",
        slug,
    )
    return player, session["watch_url"]


def shoot_shared(shooter: "Shooter", visitor, moderator, slug: str) -> None:
    """A shared world: the join page of its invite link, the moderator and a guest playing it
    (the creator's play page, with the presence list), its Live card and its watch page."""
    frame = ("#play[data-frames]", "the world's first frame")
    host = moderator.new_page()
    host.goto(f"{shooter.base}/play/{slug}/")
    wait_for(host, frame[0], frame[1])
    session_id = host.get_attribute("#play", "data-session")
    if not session_id:
        print("  note: no shared session started; no join, live or shared play screenshots")
        host.close()
        return
    shooter.shoot(visitor, "join", f"/join/{session_id}/")
    guest = visitor.new_page()
    guest.goto(f"{shooter.base}/join/{session_id}/")
    if guest.locator("#join-name").count():
        guest.fill("#join-name", "Sam")
    guest.click("#join-button")
    wait_for(guest, frame[0], "the guest's first frame")
    both = ("#presence-list .presence-player:nth-child(2)", "both players in the presence list")
    thumbs = (".live-card[data-thumb-loads]", "a live thumbnail")
    shooter.shoot(visitor, "live", "/live/", ready=[thumbs])
    shooter.shoot(visitor, "home-live", "/", ready=[thumbs])
    shooter.shoot(visitor, "watch-shared", f"/watch/{session_id}/",
                  ready=[("#watch[data-frames]", "a frame"), both], full_page=False)  # fmt: skip
    host.close()  # the creator's seat, reopened by the screenshot's own tab
    shooter.shoot(moderator, "play-shared", f"/play/{slug}/?session={session_id}",
                  ready=[frame, both], full_page=False)  # fmt: skip
    guest.close()


def shoot_replay(shooter: "Shooter", visitor, player_context, slug: str) -> None:
    """A run: played (a walk, an event), ended, published; its replay page, and a gallery card
    playing the run's clip under the pointer."""
    page = player_context.new_page()
    page.goto(f"{shooter.base}/play/{slug}/")
    wait_for(page, "#play[data-state='live']", "the world going live")
    page.focus("#play-canvas")
    page.keyboard.down("d")
    page.wait_for_timeout(2500)
    page.keyboard.up("d")
    page.fill("#prompt-text", "a lantern appears")
    page.keyboard.press("Enter")
    page.wait_for_timeout(1500)
    page.focus("#play-canvas")
    page.keyboard.down("s")
    page.wait_for_timeout(3000)
    page.keyboard.up("s")
    page.click("#end-session")
    wait_for(page, "#replay-link:not([hidden])", "the replay link")
    href = page.get_attribute("#replay-link", "href")
    if not href:
        state = page.get_attribute("#play", "data-state")
        sid = page.get_attribute("#play", "data-session")
        got = page.evaluate(f"fetch('/api/sessions/{sid}/recording/').then(r => r.text())")
        print(f"  note: no recording (the play page is {state}: {got[:300]}); no replay shots")
        page.close()
        return
    page.goto(shooter.base + href)
    wait_for(page, "#replay-publish", "the publish button")
    if page.locator("#replay-publish").count():
        page.click("#replay-publish")  # public: the world's card plays a clip of it
        page.wait_for_timeout(3000)
    page.close()
    ready = ("#replay-overlay[hidden]", "the replay's video")
    shooter.shoot(visitor, "replay", href, ready=[ready])
    shooter.shoot(visitor, "world-runs", f"/w/{slug}/")
    home = visitor.new_page()
    home.goto(shooter.base + f"/w/{slug}/")
    home.goto(shooter.base + "/")
    card = home.locator(f".card:has(a[href='/w/{slug}/']):has(.card-clip)").first
    if card.count():
        card.scroll_into_view_if_needed()
        card.hover()
        wait_for(home, ".card-clip.playing", "the card's clip playing")
        home.wait_for_timeout(800)
        target = shooter.out / f"{shooter.size}-card-clip.png"
        card.screenshot(path=str(target))
        shooter.saved.append(target)
        print(f"  {target}")
    else:
        print("  note: no card with a clip; no card-clip screenshot")
    home.close()


def shoot_all(browser, base: str, out: Path, slugs: dict[str, str]) -> list[Path]:
    saved = []
    for size, options in SIZES.items():
        print(f"{size} ({options['viewport']['width']}×{options['viewport']['height']}):")
        shooter = Shooter(base, out, size)
        visitor = browser.new_context(**options)
        moderator = browser.new_context(**options)
        log_in(moderator, base)
        shooter.shoot(visitor, "home", "/")
        shooter.shoot(visitor, "live-empty", "/live/", ready=[("#live[data-loaded]", "the list")])
        shooter.shoot(visitor, "category", "/c/games/")
        shooter.shoot(visitor, "search", "/search/?q=forest")
        shooter.shoot(visitor, "world", f"/w/{slugs['games']}/")
        frame = ("#play[data-frames]", "the world's first frame")
        ready = {
            "stories": [(".story-option:not([disabled])", "the story options")],
            "characters": [("#chat-log li", "the character's greeting")],
        }
        for category in ("games", "stories", "characters", "live"):
            if category not in slugs:
                print(f"  note: no published {category} world; no {size}-play-{category}.png")
                continue
            steps = [frame, *ready.get(category, [])]
            shooter.shoot(visitor, f"play-{category}", f"/play/{slugs[category]}/", ready=steps,
                          full_page=False)  # fmt: skip
        player, watch_url = start_public_session(moderator, base, slugs["games"])
        shooter.shoot(visitor, "watch", watch_url, ready=[("#watch[data-frames]", "a frame")],
                      full_page=False)  # fmt: skip
        player.close()
        # A story world for the shared shots: the games world above still holds the moderator's
        # session (closing its tab leaves it in its reconnect grace).
        shoot_shared(shooter, visitor, moderator, slugs.get("stories") or slugs["games"])
        shoot_replay(shooter, visitor, moderator, slugs["games"])
        shooter.shoot(moderator, "publish", "/publish/")
        shooter.shoot(moderator, "moderation-queue", "/moderation/")
        visitor.close()
        moderator.close()
        saved += shooter.saved
    return saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "screenshots")
    args = parser.parse_args()
    if not chromium_path():
        print("Chromium is not installed: apt-get install -y chromium", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.png"):
        old.unlink()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="parallax-screens-") as tmp:
        env = server_env(Path(tmp))
        slugs = load_catalog(env)
        port = free_port()
        server = start_daphne(env, port)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(server, base + "/api/categories/")
            with sync_playwright() as p:
                browser = launch_chromium(p)
                saved = shoot_all(browser, base, args.out, slugs)
                browser.close()
        finally:
            log = stop(server)
            if os.environ.get("PARALLAX_SHOW_SERVER_LOG"):
                print(log[-5000:])
    print(f"{len(saved)} screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
