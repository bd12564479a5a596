"""Browser fixtures: the real ASGI server (Daphne) on a free port over the test database, and
Debian's Chromium driven by Playwright. Never a downloaded browser.

`live_url` (module scope) starts Daphne once per test module. A module can override
`daphne_env` (module scope) to pass extra environment, e.g. for the play page.
Tests that use `live_url` must also use `transactional_db` so the server sees their rows.
The server and browser helpers live in live_server.py, shared with `make screenshots`.
"""

import os
import time
from pathlib import Path

import pytest
from django.db import OperationalError, connection
from django.test import TransactionTestCase

from tests.browser.live_server import (
    ROOT,
    chromium_path,
    free_port,
    launch_chromium,
    start_daphne,
    stop,
    wait_until_up,
)

CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _missing(what: str):
    if CI:
        pytest.exit(f"CI=true and {what}", returncode=3)
    pytest.skip(what)


def database_url() -> str:
    """The test database (test_<name>) as a URL, for processes started by a test."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    host = db["HOST"] or "127.0.0.1"
    user = db["USER"] or "postgres"
    auth = f"{user}:{db['PASSWORD']}" if db.get("PASSWORD") else user
    return f"postgres://{auth}@{host}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture(scope="module")
def daphne_env() -> dict:
    """Extra environment for the server; override in a test module to change it."""
    return {}


@pytest.fixture(scope="module")
def live_url(django_db_setup, django_db_blocker, daphne_env, tmp_path_factory):
    """Base URL of a Daphne server running this checkout against the test database."""
    with django_db_blocker.unblock():
        db_url = database_url()
    media = tmp_path_factory.mktemp("live-media")
    port = free_port()
    env = (
        os.environ
        | {
            "DATABASE_URL": db_url,
            "DEBUG": "false",
            "MEDIA_ROOT": str(media),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "PYTHONPATH": str(ROOT),
            "PYTHONUNBUFFERED": "1",
        }
        | daphne_env
    )
    proc = start_daphne(env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(proc, url + "/api/categories/")
        yield url
    finally:
        log = stop(proc)
        if os.environ.get("PARALLAX_SHOW_SERVER_LOG"):
            print(log[-5000:])


# Module scope: Playwright's sync API keeps an event loop on this thread while the browser lives,
# and asyncio tests in later modules could not start theirs.
@pytest.fixture(autouse=True)
def _server_settles(request):
    """Before a browser test's database is flushed, let the server finish what the closed
    pages set off (sockets leaving their seats): a TRUNCATE racing a two-table update is a
    deadlock in PostgreSQL, and the flush is the one that loses."""
    if "live_url" not in request.fixturenames or connection.vendor != "postgresql":
        yield
        return
    request.getfixturevalue("transactional_db")  # set up first, so torn down after this
    yield
    deadline, quiet_since = time.monotonic() + 10, None
    while time.monotonic() < deadline:  # until no other connection has worked for half a second
        if _others_busy():
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= 0.5:
            break
        time.sleep(0.1)


_flush = TransactionTestCase._fixture_teardown


def _flush_again_after_a_deadlock(self):
    """The flush again when PostgreSQL chose it as a deadlock's victim: a session the closed
    page left (its generation finishing, its seat let go) may still write after the settling
    above, and then nothing is wrong with either; once more is enough for what was left."""
    for attempt in range(3):
        try:
            return _flush(self)
        except OperationalError as exc:
            if "deadlock" not in str(exc) or attempt == 2:
                raise
            time.sleep(0.5)


TransactionTestCase._fixture_teardown = _flush_again_after_a_deadlock


def _others_busy() -> bool:
    """Another connection to the test database is inside a statement or a transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state <> 'idle'"
        )
        return cursor.fetchone()[0] > 0


@pytest.fixture(scope="module")
def chromium():
    if not chromium_path():
        _missing("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; Django's ORM (test DB set-up and
    # flushes) would then refuse to run. The documented workaround, scoped to the browser's life.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield from _launch(sync_playwright)
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def _launch(sync_playwright):
    with sync_playwright() as p:
        browser = launch_chromium(p)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(60_000)  # the first screening call loads a text encoder
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture
def cover_file(tmp_path) -> Path:
    from PIL import Image

    path = tmp_path / "cover.png"
    img = Image.new("RGB", (320, 180), (30, 90, 160))
    for x in range(0, 320, 40):
        img.paste((240, 200, 60), (x, 60, x + 20, 120))
    img.save(path)
    return path
