"""Gallery throughput: requests/s and p50/p99 latency for the main pages under concurrent load.

Starts Daphne itself with production-like settings (DEBUG=false, a collected and hashed static
manifest served by WhiteNoise, PostgreSQL with a connection pool, Redis cache), loads the demo
catalog plus extra worlds, then drives each endpoint with an asyncio/httpx load generator on
127.0.0.1 for a fixed time: anonymous visitors (no cookies: the crowd), one signed-in person
and one who liked five of the cards the category page shows. Each endpoint's req/s is also
given as a share of the static file's, measured in the same run. A second table runs 2 Daphne
processes, the load spread over both as a balancer would.

    .venv/bin/python bench/gallery.py --seconds 10 --concurrency 16

The load generator shares the machine with the servers: on a small box the numbers are a floor.
"""

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


@dataclass
class Result:
    name: str
    path: str
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies_ms) if self.latencies_ms else float("nan")

    @property
    def p99(self) -> float:
        lat = sorted(self.latencies_ms) or [float("nan")]
        return lat[min(len(lat) - 1, int(len(lat) * 0.99))]

    def row(self, static_rps: float) -> str:
        share = self.rps / static_rps if static_rps else float("nan")
        return (
            f"| {self.name:<22} | {self.path:<30} | {self.rps:>8.1f} | {self.p50:>7.1f} "
            f"| {self.p99:>7.1f} | {share:>13.2f} | {self.requests:>6} | {self.errors:>6} |"
        )


HEADER = (
    f"| {'endpoint':<22} | {'path':<30} | {'req/s':>8} | {'p50 ms':>7} | {'p99 ms':>7} "
    f"| {'÷ static req/s':>13} | {'ok':>6} | {'errors':>6} |\n"
    f"|{'-' * 24}|{'-' * 32}|{'-' * 9}:|{'-' * 8}:|{'-' * 8}:|{'-' * 14}:|{'-' * 7}:|{'-' * 7}:|"
)


def run(cmd: list[str], env: dict) -> None:
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)


def ensure_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


EXTRA_WORLDS = """
from gallery.models import User
from worlds.models import World, WorldVersion, SPEC_FIELDS, Category
from django.utils import timezone
import random
rng = random.Random(1)
creator, _ = User.objects.get_or_create(username="bench-creator")
words = "forest desert snow lava river canyon island swamp meadow castle harbour cave".split()
have = World.objects.filter(creator=creator).count()
for i in range(have, {n}):
    a, b = rng.sample(words, 2)
    w = World.objects.create(
        slug=f"bench-{{i}}", title=f"{{a.title()}} {{b.title()}} {{i}}", creator=creator,
        category=rng.choice(Category.values), prompt=f"a {{a}} next to a {{b}}, world {{i}}",
        description=f"A {{a}} and a {{b}}.", seed=i, status="published",
        published_at=timezone.now(), play_count=rng.randrange(500),
        like_count=rng.randrange(80), trending_score=rng.random() * 10,
        character_name="Bench" if i % 4 == 2 else "",
    )
    v = WorldVersion.objects.create(world=w, number=1, **{{f: getattr(w, f) for f in SPEC_FIELDS}})
    World.objects.filter(pk=w.pk).update(current_version=v)
print(World.objects.count())
"""

# A signed-in person's session: its key is the cookie the "signed in" endpoints send. The liker
# liked the first {likes} games by trending (the first page of /c/games/ shows their hearts).
SIGNED_IN = """
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from gallery.models import User
from worlds.models import Like, World
user, _ = User.objects.get_or_create(username="{username}")
games = World.objects.filter(category="games", status="published").order_by("-trending_score")
for world in games[:{likes}]:
    Like.objects.get_or_create(user=user, world=world)
store = SessionStore()
store[SESSION_KEY] = str(user.pk)
store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
store[HASH_SESSION_KEY] = user.get_session_auth_hash()
store.create()
print(store.session_key)
"""


def signed_in(env: dict, username: str, likes: int) -> str:
    """A new session's key for `username`, who liked `likes` games."""
    script = SIGNED_IN.format(username=username, likes=likes)
    return subprocess.run(
        [PY, "manage.py", "shell", "-c", script], cwd=ROOT, env=env, check=True,
        capture_output=True, text=True,
    ).stdout.split()[-1]  # fmt: skip


def prepare(env: dict, extra: int) -> tuple[str, str, str]:
    """Migrate, collect static files, load demo content; a hashed static file's URL, a
    signed-in session's key and a liker's."""
    run([PY, "manage.py", "migrate", "--noinput", "-v0"], env)
    run([PY, "manage.py", "collectstatic", "--noinput", "-v0"], env)
    run([PY, "manage.py", "load_demo"], env)
    run([PY, "manage.py", "shell", "-c", EXTRA_WORLDS.format(n=extra)], env)
    manifest = json.loads((Path(env["STATIC_ROOT"]) / "staticfiles.json").read_text())
    static = "/static/" + manifest["paths"]["css/site.css"]
    return static, signed_in(env, "bench-visitor", 0), signed_in(env, "bench-liker", 5)


async def hammer(
    bases: list[str], name: str, path: str, seconds: float, concurrency: int, cookies: dict
) -> Result:
    """`concurrency` clients asking `path` back to back for `seconds`, spread over the servers
    at `bases` as a round-robin balancer would."""
    latencies: list[float] = []
    errors = 0
    per = max(1, concurrency // len(bases))
    limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
    clients = [
        httpx.AsyncClient(base_url=b, limits=limits, timeout=30, cookies=cookies) for b in bases
    ]
    try:
        for client in clients:
            for _ in range(min(per, 4)):  # warm-up: connections, caches, lazy imports
                await client.get(path)
        stop_at = time.perf_counter() + seconds

        async def worker(client: httpx.AsyncClient) -> None:
            nonlocal errors
            while time.perf_counter() < stop_at:
                t0 = time.perf_counter()
                try:
                    response = await client.get(path)
                    ok = response.status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    latencies.append((time.perf_counter() - t0) * 1000)
                else:
                    errors += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(clients[i % len(clients)]) for i in range(concurrency)))
        elapsed = time.perf_counter() - started
    finally:
        for client in clients:
            await client.aclose()
    return Result(name, path, len(latencies), errors, elapsed, latencies)


def wait_up(proc: subprocess.Popen, url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"daphne exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise SystemExit("daphne did not come up")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per endpoint")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--extra-worlds", type=int, default=300, help="catalog size padding")
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/bench_gallery"
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/11")
    parser.add_argument("--pool-size", type=int, default=8)
    parser.add_argument("--processes", default="1,2", help="web process counts, one table each")
    parser.add_argument(
        "--page-cache-seconds", type=int, default=10, help="HOME_CACHE_SECONDS; 0: no cache"
    )
    parser.add_argument(
        "--viewer-cache-seconds", type=int, default=60, help="VIEWER_CACHE_SECONDS; 0: no cache"
    )
    args = parser.parse_args()

    ensure_database(args.database_url)
    workdir = Path(tempfile.mkdtemp(prefix="parallax-bench-"))
    env = os.environ | {
        "DATABASE_URL": args.database_url,
        "REDIS_URL": args.redis_url,
        "CACHE_KEY_PREFIX": "bench",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "STATIC_MANIFEST": "true",
        "STATIC_ROOT": str(workdir / "static"),
        "WHITENOISE_USE_FINDERS": "false",
        "MEDIA_ROOT": str(workdir / "media"),
        "INFERENCE_IN_PROCESS": "false",
        "LOG_LEVEL": "WARNING",
        "PARALLAX_VAR_DIR": str(workdir / "var"),
        "DB_CONN_MAX_AGE": "0",
        "DB_POOL_MAX_SIZE": str(args.pool_size),
        "HOME_CACHE_SECONDS": str(args.page_cache_seconds),
        "VIEWER_CACHE_SECONDS": str(args.viewer_cache_seconds),
    }
    print("preparing: migrate, collectstatic, demo content …", flush=True)
    static_path, session, liker_session = prepare(env, args.extra_worlds)
    visitor, liker = {"sessionid": session}, {"sessionid": liker_session}
    endpoints = [
        ("home", "/", {}),
        ("category", "/c/games/", {}),
        ("search", "/search/?q=forest+river", {}),
        ("world page", "/w/the-lantern-keeper/", {}),
        ("api worlds", "/api/worlds/", {}),
        ("category (signed in)", "/c/games/", visitor),
        ("category (a liker)", "/c/games/", liker),
        ("home (signed in)", "/", visitor),
        ("static file", static_path, {}),
    ]
    tables = {}
    for n in (int(x) for x in args.processes.split(",")):
        print(f"{n} web process(es):", flush=True)
        tables[n] = serve_and_hammer(env, endpoints, args, n)

    for n, rows in tables.items():
        print()
        print(
            f"Daphne ({n} process{'es' if n > 1 else ''}), DEBUG=false, PostgreSQL pool of "
            f"{args.pool_size}, Redis cache, page cache {args.page_cache_seconds} s, viewer "
            f"cache {args.viewer_cache_seconds} s; "
            f"{args.seconds:.0f} s per endpoint, concurrency {args.concurrency}, "
            f"{os.cpu_count()} CPUs shared with the load generator"
        )
        print(HEADER)
        static_rps = rows[-1].rps
        for row in rows:
            print(row.row(static_rps))


def serve_and_hammer(env: dict, endpoints, args, processes: int) -> list[Result]:
    ports = [args.port + i for i in range(processes)]
    servers = [
        subprocess.Popen(
            [
                PY,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "--verbosity",
                "0",
                "gallery.asgi:application",
            ],
            cwd=ROOT,
            env=env,
        )  # fmt: skip
        for port in ports
    ]
    bases = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        for server, base in zip(servers, bases, strict=True):
            wait_up(server, base + "/api/categories/")
        results = []
        for name, path, cookies in endpoints:
            print(f"  {name}: {args.seconds:.0f} s at concurrency {args.concurrency}", flush=True)
            results.append(
                asyncio.run(hammer(bases, name, path, args.seconds, args.concurrency, cookies))
            )
        return results
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(timeout=20)


if __name__ == "__main__":
    main()
