"""`/api/recordings/` and `/api/sessions/<id>/recording/` over a run recorded by the real
engine into the S3 server: who sees and changes what, exports (an MP4 read back), forks, and
clear 4xx answers for other people's runs, bad frames and exports already running."""

import io

import av
import pytest
from django.core.files.storage import default_storage
from django.utils import timezone
from rest_framework.test import APIClient

from inference.serving import recording as rec
from inference.serving.core import EngineCore
from inference.serving.session import Camera, LiveSession
from inference.world.engine import WorldEngine
from sessions import services
from sessions.models import EndReason, PlaySession, Recording, Seat, SessionStatus, VideoStatus
from sessions.world_store import StorageWorldStore
from tests.sessions.play_fixtures import make_user, make_world
from worlds.cover_render import weights_digest

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def engine():
    return WorldEngine.load()


def _client(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def _played(engine, *, world, players, ticks=48, weights=None) -> Recording:
    """A session of `world` seated by `players`, played on the engine with its parts written
    to the store as the worker writes them, then ended."""
    session = PlaySession.objects.create(
        world=world, world_version=world.current_version, player=players[0],
        status=SessionStatus.LIVE, started_at=timezone.now(), is_shared=len(players) > 1,
        max_players=len(players),
    )  # fmt: skip
    for slot, user in enumerate(players):
        Seat.objects.create(session=session, slot=slot, name=user.username, user=user)
    core = EngineCore(engine, fps=24.0)
    live = LiveSession(str(session.id), prompt=world.current_version.prompt, seed=world.seed)
    live.recorder = rec.Recorder(
        str(session.id), worker="w", weights=weights_digest() if weights is None else weights,
        fps=24.0,
    )  # fmt: skip
    for slot in range(len(players)):
        live.cameras[slot] = Camera(str(session.id), slot, name=players[slot].username)
    core.sessions[live.session_id] = live
    core.create_world(live)
    core.go_live(live, 0.0)
    live.cameras[0].keys = frozenset({"d"})
    live.cameras[0].events.append((1, "a lantern appears"))
    store, now = StorageWorldStore(), 0.0
    for tick in range(ticks):
        now += 1 / 24
        if tick % 2 == 0 and (batch := core.schedule()) is not None:
            core.collect(batch, core.execute(batch), now, took=0.004)
        core.pace(now)
        if tick == ticks // 2:
            store.save(*core.recording_part(live, now))
    store.save(*core.recording_part(live, now + 1, final=True))
    core.drop_world(live.world_id)
    services.session_end(session=session, reason=EndReason.PLAYER)
    return Recording.objects.get(session=session)


@pytest.fixture
def run(engine, s3_storage, clean_placement):
    host, guest = make_user("host"), make_user("guest")
    return _played(engine, world=make_world(creator=host), players=[host, guest]), host, guest


def test_an_ended_session_has_its_recording_for_its_players_only(run):
    recording, host, guest = run
    url = f"/api/sessions/{recording.session_id}/recording/"
    body = _client(guest).get(url).json()
    assert body["id"] == str(recording.id) and body["complete"] and not body["public"]
    assert [p["name"] for p in body["players"]] == ["host", "guest"]
    assert body["frames"] == body["cameras"]["0"] > 0 and body["duration_s"] == pytest.approx(
        body["frames"] / 24, abs=0.01
    )
    assert [(m["kind"], m["text"], m["by"]) for m in body["marks"]] == [
        ("event", "a lantern appears", "host")
    ]
    assert body["video_status"] == "none" and body["video_url"] is None
    assert body["replay_url"] == f"/r/{recording.id}/" and body["weights_match"]
    for viewer in (make_user("stranger"), None):
        for path in (url, f"/api/recordings/{recording.id}/"):
            response = _client(viewer).get(path)
            assert response.status_code == 404 and "private" in response.json()["detail"]


def test_only_a_player_publishes_and_then_anyone_sees_it(run):
    recording, host, guest = run
    url = f"/api/recordings/{recording.id}/"
    stranger = make_user("stranger")
    assert _client(stranger).patch(url, {"public": True}, format="json").status_code == 404
    response = _client(guest).patch(url, {"public": True}, format="json")
    assert response.status_code == 200 and response.json()["public"] is True
    assert _client(None).get(url).json()["public"] is True
    refused = _client(stranger).patch(url, {"public": False}, format="json")
    assert refused.status_code == 403 and "players" in refused.json()["detail"]
    assert _client(stranger).delete(url).status_code == 403
    assert _client(host).patch(url, {"public": "garbage"}, format="json").status_code == 400
    assert Recording.objects.get(pk=recording.pk).is_public


def test_a_run_a_moderator_ended_stays_private(engine, s3_storage, clean_placement):
    host = make_user("host")
    recording = _played(engine, world=make_world(creator=host), players=[host])
    PlaySession.objects.filter(pk=recording.session_id).update(end_reason=EndReason.MODERATOR)
    response = _client(host).patch(
        f"/api/recordings/{recording.id}/", {"public": True}, format="json"
    )
    assert response.status_code == 409 and "moderator" in response.json()["detail"]
    assert not Recording.objects.get(pk=recording.pk).is_public


def test_export_renders_an_mp4_per_camera_with_its_frames_and_the_world(run):
    recording, host, _ = run
    response = _client(host).post(f"/api/recordings/{recording.id}/export/")
    assert response.status_code == 202  # Celery runs eagerly in the suite: it is done
    body = _client(host).get(f"/api/recordings/{recording.id}/").json()
    assert body["video_status"] == "ready" and set(body["videos"]) == {"0", "1"}
    version = recording.world_version
    for slot, frames in body["cameras"].items():
        key = Recording.objects.get(pk=recording.pk).videos[slot]
        with default_storage.open(key, "rb") as f, av.open(io.BytesIO(f.read())) as box:
            decoded = [frame.to_ndarray(format="rgb24") for frame in box.decode(video=0)]
            meta = box.metadata
        assert len(decoded) == frames and decoded[0].shape == (768, 768, 3)
        assert meta["title"] == version.title and f"seed {version.seed}" in meta["comment"]
        assert meta["description"] == version.prompt
    assert "/thumbnail.jpg" in body["thumbnail_url"]


def test_an_export_already_running_is_a_409_and_other_weights_cannot_export(
    engine, run, s3_storage, clean_placement
):
    recording, host, _ = run
    Recording.objects.filter(pk=recording.pk).update(video_status=VideoStatus.RENDERING)
    response = _client(host).post(f"/api/recordings/{recording.id}/export/")
    assert response.status_code == 409 and "already running" in response.json()["detail"]
    other = _played(engine, world=make_world(creator=host), players=[host], weights="0123abcd")
    body = _client(host).get(f"/api/recordings/{other.id}/").json()
    assert body["weights_match"] is False
    refused = _client(host).post(f"/api/recordings/{other.id}/export/")
    assert refused.status_code == 409 and "other world model weights" in refused.json()["detail"]
    assert _client(host).post(f"/api/recordings/{other.id}/fork/", {"frame": 1}).status_code == 409


@pytest.mark.parametrize("payload", [{"frame": -1}, {"frame": 10**7}, {"frame": "x"}, {},
                                     {"frame": 1, "slot": 5}])  # fmt: skip
def test_a_fork_of_a_frame_the_run_lacks_is_a_400(run, payload):
    recording, host, _ = run
    response = _client(host).post(f"/api/recordings/{recording.id}/fork/", payload, format="json")
    assert response.status_code == 400
    assert not PlaySession.objects.filter(forked_from=recording).exists()


def test_a_fork_is_a_new_session_of_the_run_version_from_its_frame(run, worker_slots):
    recording, host, guest = run
    worker_slots.add(capacity=4)
    stranger = make_user("stranger")
    url = f"/api/recordings/{recording.id}/fork/"
    assert _client(stranger).post(url, {"frame": 3}, format="json").status_code == 404
    response = _client(guest).post(url, {"frame": 5, "slot": 1}, format="json")
    assert response.status_code == 201, response.content
    fork = PlaySession.objects.get(pk=response.json()["id"])
    assert (fork.forked_from_id, fork.forked_frame, fork.forked_slot) == (recording.pk, 5, 1)
    assert fork.world_version_id == recording.world_version_id and fork.seats.get().user == guest
    from sessions.worker_client import attach_message

    attach = attach_message(fork, restore=False)
    assert (attach.fork_key, attach.fork_frame, attach.fork_slot) == (recording.key, 5, 1)


def test_deleting_a_run_removes_its_files(run):
    recording, host, _ = run
    _client(host).post(f"/api/recordings/{recording.id}/export/")
    key = recording.key
    assert StorageWorldStore().load_all(key)
    assert _client(host).delete(f"/api/recordings/{recording.id}/").status_code == 204
    assert not Recording.objects.filter(pk=recording.pk).exists()
    _, files = default_storage.listdir(key)
    assert files == []


def test_a_recording_still_being_written_says_so(engine, run, s3_storage):
    recording, host, _ = run
    Recording.objects.filter(pk=recording.pk).update(complete=False)
    parts = StorageWorldStore().load_all(recording.key)
    last = sorted(default_storage.listdir(recording.key)[1])[-1]
    default_storage.delete(f"{recording.key}/{last}")  # the last part is not written yet
    body = _client(host).get(f"/api/recordings/{recording.id}/").json()
    assert body["complete"] is False and len(parts) == 2
    response = _client(host).post(f"/api/recordings/{recording.id}/export/")
    assert response.status_code == 409 and "still being written" in response.json()["detail"]


def test_the_schema_documents_recordings(db):
    schema = _client().get("/api/schema/?format=json").json()
    for path, methods in {
        "/api/sessions/{session_id}/recording/": {"get"},
        "/api/recordings/{recording_id}/": {"get", "patch", "delete"},
        "/api/recordings/{recording_id}/export/": {"post"},
        "/api/recordings/{recording_id}/fork/": {"post"},
    }.items():
        assert methods <= set(schema["paths"][path]), path
    fork = schema["paths"]["/api/recordings/{recording_id}/fork/"]["post"]
    assert {"201", "400", "404", "409"} <= set(fork["responses"])


def test_a_published_run_becomes_its_world_card_clip_and_the_creator_picks_another(
    engine, s3_storage, clean_placement
):
    host, guest = make_user("host"), make_user("guest")
    world = make_world(creator=host)
    first = _played(engine, world=world, players=[guest], ticks=300)
    assert _client(guest).patch(f"/api/recordings/{first.id}/", {"public": True}, format="json")
    world.refresh_from_db()
    assert world.preview_run == first.pk and not world.preview_picked
    with default_storage.open(world.preview_clip, "rb") as f, av.open(io.BytesIO(f.read())) as box:
        clip = [frame.to_ndarray(format="rgb24") for frame in box.decode(video=0)]
    assert len(clip) == 96 and clip[0].shape == (384, 384, 3)  # 4 s, half the export's size
    home = _client().get("/").content.decode()
    assert f'class="card-clip" data-src="{world.preview_clip_url.split("?")[0]}' in home
    # the world's page lists its public runs
    page = _client().get(f"/w/{world.slug}/").content.decode()
    assert f"/r/{first.id}/" in page and "Public runs" in page
    # only the creator picks the card's run, and only a public one
    second = _played(engine, world=world, players=[host], ticks=200)
    url = f"/api/recordings/{second.id}/cover/"
    assert _client(host).post(url).status_code == 409  # still private
    _client(host).patch(f"/api/recordings/{second.id}/", {"public": True}, format="json")
    world.refresh_from_db()
    assert world.preview_run == first.pk  # the longer public run stays the card's
    assert _client(guest).post(url).status_code == 403
    assert _client(host).post(url).status_code == 202
    world.refresh_from_db()
    assert (world.preview_run, world.preview_picked) == (second.pk, True)
    # made private again, its clip leaves the card
    _client(host).patch(f"/api/recordings/{second.id}/", {"public": False}, format="json")
    world.refresh_from_db()
    assert (world.preview_run, world.preview_clip) == (None, "")
