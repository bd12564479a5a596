"""The stack bench/play.py plays on: a fresh database, its players, Daphne and the inference
workers on the chosen channel layer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tests.stack import (
    Processes,
    clear_placement,
    daphne_argv,
    free_port,
    worker_argv,
)
from tests.stack import stack_env as base_env

ROOT = Path(__file__).resolve().parent.parent

LAYERS = {
    "pubsub": "sessions.channel_layer.FrameCappedPubSubChannelLayer",  # the default
    "core": "channels_redis.core.RedisChannelLayer",
}


def seats_needed(args) -> int:
    """Players on the workers at once (the modes take turns)."""
    return max(args.players, args.rooms * args.players_per_room)


def prepare_database(args) -> None:
    import psycopg

    name = args.database_url.rsplit("/", 1)[1]
    admin = args.database_url.rsplit("/", 1)[0] + "/postgres"
    # A fresh database each run: the bench's own, never a shared one.
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=stack_env(args, "pubsub"),
        check=True,
    )


def stack_env(args, layer: str) -> dict:
    return base_env(
        database_url=args.database_url,
        redis_url=args.redis_url,
        CHANNEL_LAYER_BACKEND=LAYERS[layer],
        LOG_LEVEL="INFO",  # the workers' stats lines (terrain held/moved) are INFO; to files
    )


def make_players(args, count: int) -> tuple[str, list[dict]]:
    """A published world and `count` players (API token + session cookie), through the ORM."""
    os.environ.update(stack_env(args, "pubsub"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gallery.settings")
    import django

    django.setup()
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from gallery.models import User
    from sessions.models import ACTIVE_STATUSES, PlaySession
    from worlds.models import Category, World, WorldStatus, WorldVersion

    PlaySession.objects.filter(status__in=ACTIVE_STATUSES).update(status="ended")
    owner, _ = User.objects.get_or_create(username="bench-owner")
    world = World.objects.filter(slug="bench-meadow").first()
    if world is None:
        world = World.objects.create(
            slug="bench-meadow",
            title="Bench meadow",
            category=Category.GAMES,
            prompt="a sunny meadow with a pond and a few trees",
            seed=11,
            status=WorldStatus.PUBLISHED,
            creator=owner,
        )
        version = WorldVersion.objects.create(
            world=world,
            number=1,
            title=world.title,
            category=world.category,
            prompt=world.prompt,
            seed=world.seed,
        )
        world.current_version = version
        world.save(update_fields=["current_version"])
    players = []
    for i in range(count):
        user, _ = User.objects.get_or_create(username=f"bench-player-{i}")
        token, _ = Token.objects.get_or_create(user=user)
        client = Client()
        client.force_login(user)
        players.append({"token": token.key, "cookie": client.cookies["sessionid"].value})
    return world.slug, players


class Stack:
    def __init__(self, args, layer: str):
        self.args, self.layer = args, layer
        self.port = free_port()
        self.logdir = Path(tempfile.mkdtemp(prefix="bench-play-"))
        self.procs = Processes(self.logdir, stack_env(args, layer))
        self.daphne = None
        self.workers: list[subprocess.Popen] = []
        self.names: dict[str, subprocess.Popen] = {}

    def start(self) -> None:
        from inference.serving.placement import RedisPlacement

        clear_placement(self.args.redis_url)
        self.daphne = self.procs.spawn("daphne", daphne_argv(self.port))
        # --kill: the survivors must hold the killed worker's sessions too.
        share = -(-seats_needed(self.args) // max(1, self.args.workers - bool(self.args.kill)))
        capacity = self.args.capacity or share
        for i in range(self.args.workers):
            name = f"bench-{self.layer}-{i}-{uuid.uuid4().hex[:4]}"
            argv = worker_argv(name, capacity=capacity, fps=self.args.fps)
            self.names[name] = self.procs.spawn(name, argv)
            self.workers.append(self.names[name])
        placement = RedisPlacement(self.args.redis_url)
        try:
            self.procs.wait_up(
                port=self.port,
                placement=placement,
                workers=self.args.workers,
                timeout=self.args.start_timeout,
            )
        except RuntimeError as exc:
            raise SystemExit(f"{exc}\nlogs in {self.logdir}") from None

    def cpu_seconds(self) -> tuple[float, float]:
        """(workers, daphne) user+system CPU seconds so far."""
        tick = os.sysconf("SC_CLK_TCK")

        def cpu(pid: int) -> float:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / tick

        return sum(cpu(p.pid) for p in self.workers), cpu(self.daphne.pid)

    def terrain_stats(self) -> dict:
        """The workers' terrain, dynamics and frame counters, summed over their latest stats lines
        (logged every few seconds while they serve, so a window's figures are within that of
        exact)."""
        total = {"held": 0, "moved": 0, "late": 0, "ticks": 0, "tick_s": 0.0, "sent": 0, "cut": 0}
        for name in self.names:
            lines = (self.logdir / f"{name}.log").read_text(errors="replace").splitlines()
            stats = [line.split(" stats ", 1)[1] for line in lines if " stats {" in line]
            if stats:
                last = json.loads(stats[-1])
                total["held"] += last.get("terrain_held_frames", 0)
                total["moved"] += last.get("terrain_moved_frames", 0)
                total["late"] += last.get("terrain_late_chunks", 0)
                # frames sent, and made but thrown away when new keys cut a buffer
                total["sent"] += last.get("frames_sent", 0)
                total["cut"] += last.get("frames_discarded", 0)
                # the dynamics: world ticks made on the worker's dynamics thread, and its time
                ticks = last.get("dynamics_ticks", 0)
                total["ticks"] += ticks
                total["tick_s"] += ticks * last.get("dynamics_ms_per_tick", 0.0) / 1000
        return total

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Until the ended sessions' seats are free on every worker (the next mode's start)."""
        from inference.serving.placement import RedisPlacement

        placement = RedisPlacement(self.args.redis_url)
        deadline = time.monotonic() + timeout
        while any(w["load"] for w in placement.live_workers()):
            if time.monotonic() > deadline:
                print(f"warning: workers still loaded: {placement.live_workers()}", file=sys.stderr)
                break
            time.sleep(0.2)
        time.sleep(1.0)  # the workers drop the ended worlds after the placement frees them

    def stop(self) -> None:
        self.procs.stop()
        clear_placement(self.args.redis_url)
