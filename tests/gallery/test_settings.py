"""Settings come from the environment: each case starts a fresh process with its own."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


POOL_PROBE = """
from django.db import connection
pids = []
for _ in range(4):
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pids.append(cursor.fetchone()[0])
    connection.close()  # a request ends: the connection goes back to the pool
print(connection.pool.max_size, len(set(pids)))
"""


@pytest.mark.skipif(not settings.USING_POSTGRES, reason="the pool is PostgreSQL's (CI runs it)")
def test_with_a_pool_requests_reuse_one_server_connection():
    done = _manage(
        "shell", "--no-imports", "-c", POOL_PROBE, DB_POOL_MAX_SIZE="3", DB_CONN_MAX_AGE="60"
    )
    assert done.returncode == 0, done.stderr
    size, distinct = done.stdout.split()
    # The pool may open a second connection while it fills; never one per request.
    assert size == "3" and int(distinct) <= 2
    without = _manage(
        "shell", "--no-imports", "-c", POOL_PROBE.replace("connection.pool.max_size", "0")
    )
    assert without.returncode == 0, without.stderr
    assert without.stdout.split() == ["0", "4"]  # no pool: a new server process each time


def test_production_settings_pass_the_deploy_checks(tmp_path):
    done = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="false",
        HTTPS="true",
        SECRET_KEY="x" * 64 + "-a-long-random-production-secret",
        ALLOWED_HOSTS="parallax.example",
        SECURE_HSTS_SECONDS="31536000",
        SECURE_HSTS_PRELOAD="true",
        PARALLAX_VAR_DIR=str(tmp_path),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout
    insecure = _manage("check", "--deploy", "--fail-level", "WARNING", DEBUG="true")
    assert insecure.returncode != 0
