"""Gallery throughput: requests/s and p50/p99 latency for the main pages under concurrent load.

Starts Daphne itself with production-like settings (DEBUG=false, a collected and hashed static
manifest served by WhiteNoise, PostgreSQL, Redis cache), loads the demo catalog plus extra worlds,
then drives each endpoint with an asyncio/httpx load generator on 127.0.0.1 for a fixed time.

    .venv/bin/python bench/gallery.py --seconds 10 --concurrency 16

The load generator shares the machine with the server: on a small box the numbers are a floor.
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

    def row(self, mode: str) -> str:
        lat = sorted(self.latencies_ms) or [float("nan")]
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        return (
            f"| {self.name:<14} | {mode:<7} | {self.path:<34} | {self.rps:>8.1f} "
            f"| {self.p50:>8.1f} | {p99:>8.1f} | {self.requests:>6} | {self.errors:>6} |"
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


def prepare(env: dict, extra: int) -> str:
    """Migrate, collect static files, load demo content; return a hashed static file's URL."""
    run([PY, "manage.py", "migrate", "--noinput", "-v0"], env)
    run([PY, "manage.py", "collectstatic", "--noinput", "-v0"], env)
    run([PY, "manage.py", "load_demo"], env)
    run([PY, "manage.py", "shell", "-c", EXTRA_WORLDS.format(n=extra)], env)
    manifest = json.loads((Path(env["STATIC_ROOT"]) / "staticfiles.json").read_text())
    return "/static/" + manifest["paths"]["css/site.css"]


async def hammer(base: str, name: str, path: str, seconds: float, concurrency: int) -> Result:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:
        for _ in range(min(concurrency, 4)):  # warm-up: connections, caches, lazy imports
            await client.get(path)
        stop_at = time.perf_counter() + seconds

        async def worker() -> None:
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
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
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
    parser.add_argument("--modes", default="connect,pool", help="database modes to compare")
    parser.add_argument("--pool-size", type=int, default=8)
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
    }
    print("preparing: migrate, collectstatic, demo content …", flush=True)
    static_path = prepare(env, args.extra_worlds)
    endpoints = [
        ("home", "/"),
        ("category", "/c/games/"),
        ("search", "/search/?q=forest+river"),
        ("api worlds", "/api/worlds/"),
        ("static file", static_path),
    ]
    modes = {
        # Persistent connections leak one per worker thread under ASGI: connect per request,
        "connect": {"DB_CONN_MAX_AGE": "0", "DB_POOL_MAX_SIZE": "0"},
        # or borrow one from the process's psycopg pool.
        "pool": {"DB_CONN_MAX_AGE": "0", "DB_POOL_MAX_SIZE": str(args.pool_size)},
    }
    results: dict[str, list[Result]] = {}
    for mode in args.modes.split(","):
        print(f"{mode}:", flush=True)
        results[mode] = serve_and_hammer(env | modes[mode], endpoints, args)

    print()
    print(
        f"Daphne (1 process), DEBUG=false, PostgreSQL, WhiteNoise manifest; "
        f"{args.seconds:.0f} s per endpoint, concurrency {args.concurrency}, "
        f"{os.cpu_count()} CPUs shared with the load generator"
    )
    print(
        f"| {'endpoint':<14} | {'db':<7} | {'path':<34} | {'req/s':>8} | {'p50 ms':>8} "
        f"| {'p99 ms':>8} | {'ok':>6} | {'errors':>6} |"
    )
    print(
        f"|{'-' * 16}|{'-' * 9}|{'-' * 36}|{'-' * 9}:|{'-' * 9}:|{'-' * 9}:|{'-' * 7}:|{'-' * 7}:|"
    )
    for i in range(len(endpoints)):
        for mode, rows in results.items():
            print(rows[i].row(mode))
    if {"connect", "pool"} <= results.keys():
        print()
        print("| endpoint       | req/s pool ÷ connect | p50 connect ÷ pool |")
        print("|----------------|---------------------:|-------------------:|")
        for before, after in zip(results["connect"], results["pool"], strict=True):
            print(
                f"| {before.name:<14} | {after.rps / before.rps:>20.2f} "
                f"| {before.p50 / after.p50:>18.2f} |"
            )


def serve_and_hammer(env: dict, endpoints, args) -> list[Result]:
    server = subprocess.Popen(
        [PY, "-m", "daphne", "-b", "127.0.0.1", "-p", str(args.port), "--verbosity", "0",
         "gallery.asgi:application"],
        cwd=ROOT, env=env,
    )  # fmt: skip
    base = f"http://127.0.0.1:{args.port}"
    try:
        wait_up(server, base + "/api/categories/")
        results = []
        for name, path in endpoints:
            print(f"  {name}: {args.seconds:.0f} s at concurrency {args.concurrency}", flush=True)
            results.append(asyncio.run(hammer(base, name, path, args.seconds, args.concurrency)))
        return results
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
