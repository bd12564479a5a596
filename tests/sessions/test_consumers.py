"""The play and watch consumers on the real Redis channel layer: protocol v1, ownership, bad
input, frames to player and spectators, reconnects, the queue.

The worker side here is a real registry entry (`worker_slots`) and a listener on its inbox:
these tests check what the web side sends and forwards. Frames from a real worker: see
test_play_live.py.
"""

import asyncio
import json
import time

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client

from gallery.asgi import application
from inference.serving import messages as m
from inference.serving.frames import encode_frame
from inference.serving.messages import camera_group, session_group, worker_channel
from sessions import seats, services
from sessions.models import EndReason, PlaySession, SessionStatus
from tests.sessions.play_fixtures import Inbox, make_user, make_world
from worlds.moderation import policy

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WAIT = 30


def _cookie_for(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def _anon_key() -> str:
    store = SessionStore()
    store["play"] = True
    store.save()
    return store.session_key


def _socket(path: str, session_key: str | None = None) -> WebsocketCommunicator:
    headers = [(b"origin", b"http://testserver"), (b"host", b"testserver")]
    if session_key:
        headers.append((b"cookie", f"sessionid={session_key}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def _json(socket: WebsocketCommunicator, kind: str | None = None) -> dict:
    while True:
        output = await socket.receive_output(WAIT)
        assert output["type"] == "websocket.send", output
        if output.get("text") is None:
            continue
        message = json.loads(output["text"])
        if kind is None or message["type"] == kind:
            return message


async def _status(socket, state: str) -> dict:
    while True:
        message = await _json(socket, "status")
        if message["state"] == state:
            return message


async def _closed_with(socket) -> int:
    while True:
        output = await socket.receive_output(WAIT)
        if output["type"] == "websocket.close":
            return output.get("code")


class Stage:
    """A player with a placed session, their cookie, and the worker's inbox."""

    def __init__(self, session: PlaySession, key: str, worker: str):
        self.session, self.key, self.worker = session, key, worker

    @property
    def play_path(self) -> str:
        return f"/ws/play/{self.session.id}/"


@sync_to_async
def _stage(worker_slots, *, capacity: int = 2, public: bool = True, **world) -> Stage:
    worker = worker_slots.add(capacity=capacity)
    user = make_user()
    session, _ = seats.session_create(
        world_slug=make_world(**world).slug,
        user=user,
        session_key="",
        client_ip="10.1.1.1",
        is_public=public,
    )
    return Stage(session, _cookie_for(user), worker)


async def _connected(stage: Stage, inbox: Inbox) -> WebsocketCommunicator:
    socket = _socket(stage.play_path, stage.key)
    connected, _ = await socket.connect(WAIT)
    assert connected
    attach = await inbox.next("session.attach")
    assert attach["session_id"] == str(stage.session.id)
    return socket


async def _player_and_watcher(stage: Stage) -> tuple[WebsocketCommunicator, ...]:
    """The player's socket and a spectator's, once the player has seen the spectator come."""
    player = _socket(stage.play_path, stage.key)
    watcher = _socket(f"/ws/watch/{stage.session.id}/")
    assert (await player.connect(WAIT))[0]
    assert (await watcher.connect(WAIT))[0]
    while (await _json(player, "status")).get("viewers") != 1:
        pass
    return player, watcher


async def test_the_player_connects_and_the_worker_gets_the_pinned_world(worker_slots):
    stage = await _stage(worker_slots)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = _socket(stage.play_path, stage.key)
        assert (await socket.connect(WAIT))[0]
        status = await _json(socket, "status")
        attach = await inbox.next("session.attach")
        await socket.disconnect()
    version = await sync_to_async(lambda: stage.session.world_version)()
    assert status["state"] == "starting"
    assert attach["prompt"] == version.prompt and attach["seed"] == version.seed
    assert attach["restore"] is False


async def test_it_rejects_another_users_socket(worker_slots):
    stage = await _stage(worker_slots)
    other = await sync_to_async(lambda: _cookie_for(make_user()))()
    socket = _socket(stage.play_path, other)
    assert (await socket.connect(WAIT))[0]
    assert await _closed_with(socket) == 4403
    await socket.disconnect()


async def test_it_rejects_an_anonymous_socket_on_an_account_session(worker_slots):
    stage = await _stage(worker_slots)
    socket = _socket(stage.play_path, await sync_to_async(_anon_key)())
    assert (await socket.connect(WAIT))[0]
    assert await _closed_with(socket) == 4403
    await socket.disconnect()


async def test_an_anonymous_player_plays_with_their_browser_session(worker_slots):
    worker = worker_slots.add(capacity=1)
    key = await sync_to_async(_anon_key)()
    world = await sync_to_async(make_world)()
    session, _ = await sync_to_async(seats.session_create)(
        world_slug=world.slug, user=None, session_key=key, client_ip="10.2.2.2"
    )
    async with Inbox(get_channel_layer(), worker_channel(worker)) as inbox:
        socket = _socket(f"/ws/play/{session.id}/", key)
        assert (await socket.connect(WAIT))[0]
        attach = await inbox.next("session.attach")
        await socket.disconnect()
    assert attach["session_id"] == str(session.id)


async def test_an_unknown_session_closes_4404(clean_placement):
    socket = _socket("/ws/play/2b7e8d6e-0000-4000-8000-000000000000/")
    assert (await socket.connect(WAIT))[0]
    assert await _closed_with(socket) == 4404
    await socket.disconnect()


async def test_an_ended_session_closes_4410(worker_slots):
    stage = await _stage(worker_slots)
    await sync_to_async(services.session_end)(session=stage.session, reason=EndReason.PLAYER)
    socket = _socket(stage.play_path, stage.key)
    assert (await socket.connect(WAIT))[0]
    assert await _closed_with(socket) == 4410
    await socket.disconnect()


async def test_no_one_may_watch_a_private_session(worker_slots):
    stage = await _stage(worker_slots, public=False)
    socket = _socket(f"/ws/watch/{stage.session.id}/", stage.key)
    assert (await socket.connect(WAIT))[0]
    assert await _closed_with(socket) == 4404
    await socket.disconnect()


async def test_held_keys_reach_the_worker_with_their_seq(worker_slots):
    stage = await _stage(worker_slots)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = await _connected(stage, inbox)
        await socket.send_to(text_data=json.dumps({"type": "input", "seq": 5, "keys": ["d", "w"]}))
        message = await inbox.next("session.input")
        await socket.disconnect()
    assert message == {
        "type": "session.input",
        "session_id": str(stage.session.id),
        "seq": 5,
        "keys": ["d", "w"],
        "slot": 0,
    }


async def test_a_ping_gets_a_pong(worker_slots):
    stage = await _stage(worker_slots)
    socket = _socket(stage.play_path, stage.key)
    assert (await socket.connect(WAIT))[0]
    await socket.send_to(text_data='{"type": "ping", "t": 1733000000.5}')
    pong = await _json(socket, "pong")
    await socket.disconnect()
    assert pong == {"type": "pong", "t": 1733000000.5}


BAD_MESSAGES = [
    ("{oops", "bad_json"),
    ('{"type": "jump"}', "unknown_type"),
    ('{"type": "input", "seq": 1, "keys": ["w", "shift"]}', "bad_keys"),
    (json.dumps({"type": "prompt", "seq": 2, "text": "x" * 501}), "too_long"),
    (json.dumps({"type": "input", "seq": 3, "keys": [], "pad": "x" * 5000}), "too_large"),
]


async def test_bad_messages_get_errors_and_never_reach_the_worker(worker_slots):
    stage = await _stage(worker_slots)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = await _connected(stage, inbox)
        codes = []
        for raw, _ in BAD_MESSAGES:
            await socket.send_to(text_data=raw)
            codes.append((await _json(socket, "error"))["code"])
        await socket.send_to(bytes_data=b"\x00" * 16)
        codes.append((await _json(socket, "error"))["code"])
        await socket.send_to(text_data='{"type": "input", "seq": 9, "keys": ["a"]}')
        first_after = await inbox.next()
        await socket.disconnect()
    assert codes == [code for _, code in BAD_MESSAGES] + ["bad_message"]
    # The socket survived, and the worker heard only the one valid input.
    assert first_after["type"] == "session.input" and first_after["seq"] == 9


async def test_flooding_closes_the_socket_with_4429(worker_slots):
    stage = await _stage(worker_slots)
    socket = _socket(stage.play_path, stage.key)
    assert (await socket.connect(WAIT))[0]
    for seq in range(3000):  # the burst allowance (300) ten times over, as fast as it goes
        await socket.send_to(text_data=json.dumps({"type": "input", "seq": seq, "keys": ["w"]}))
    error = await _json(socket, "error")
    code = await _closed_with(socket)
    await socket.disconnect()
    assert error["code"] == "rate_limited"
    assert code == 4429


async def test_a_burst_of_play_held_back_by_a_stall_keeps_the_socket(worker_slots):
    # 10 s of held keys and key changes (~15 a second) that a stalled process reads at once
    stage = await _stage(worker_slots)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = await _connected(stage, inbox)
        for seq in range(150):
            keys = ["w"] if seq % 3 else ["w", "d"]
            await socket.send_to(text_data=json.dumps({"type": "input", "seq": seq, "keys": keys}))
        await socket.send_to(text_data='{"type": "ping", "t": 1}')
        seen = []
        while not seen or seen[-1] != "pong":
            seen.append((await _json(socket))["type"])
        last = await inbox.next("session.input")
        while last["seq"] != 149:
            last = await inbox.next("session.input")
        await socket.disconnect()
    assert "error" not in seen


async def test_a_blocked_world_event_is_rejected_before_the_worker(worker_slots):
    stage = await _stage(worker_slots)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = await _connected(stage, inbox)
        await socket.send_to(text_data='{"type": "prompt", "seq": 4, "text": "send nudes"}')
        event = await _json(socket, "event")
        await socket.send_to(text_data='{"type": "input", "seq": 5, "keys": []}')
        first_after = await inbox.next()
        await socket.disconnect()
    assert (event["seq"], event["status"]) == (4, "rejected")
    assert event["reason"]
    assert first_after["type"] == "session.input"


async def test_frames_reach_the_player_and_every_spectator(worker_slots):
    stage = await _stage(worker_slots)
    player = _socket(stage.play_path, stage.key)
    watcher = _socket(f"/ws/watch/{stage.session.id}/")
    assert (await player.connect(WAIT))[0]
    assert (await watcher.connect(WAIT))[0]
    seen_by_player = await _json(player, "status")
    while seen_by_player.get("viewers") != 1:
        seen_by_player = await _json(player, "status")
    frame = encode_frame(12, 5, b"\xff\xd8jpeg-bytes\xff\xd9")
    await get_channel_layer().group_send(
        camera_group(stage.session.id, 0), {"type": "session.frame", "data": frame}
    )

    async def next_bytes(socket):
        while True:
            output = await socket.receive_output(WAIT)
            if output.get("bytes") is not None:
                return output["bytes"]

    got = await asyncio.gather(next_bytes(player), next_bytes(watcher))
    await watcher.disconnect()
    await player.disconnect()
    assert got == [frame, frame]
    session = await sync_to_async(PlaySession.objects.get)(pk=stage.session.id)
    assert session.peak_viewers == 1


async def test_a_frame_that_fell_behind_on_the_way_is_dropped_and_the_next_fresh_one_sent(
    worker_slots,
):
    stage = await _stage(worker_slots)
    player = _socket(stage.play_path, stage.key)
    assert (await player.connect(WAIT))[0]
    await _json(player, "status")
    layer, group = get_channel_layer(), camera_group(stage.session.id, 0)
    now = time.time()
    frames = [encode_frame(n, 0, b"\xff\xd8%d\xff\xd9" % n) for n in range(3)]
    # the worker's frames: on time, then one that waited 5 s in a queue, then on time again
    for frame, sent in zip(frames, (now, now - 5, now + 0.04), strict=True):
        await layer.group_send(group, m.Frame(data=frame, sent=sent).to_message())
    got = []
    while len(got) < 2:
        output = await player.receive_output(WAIT)
        if output.get("bytes") is not None:
            got.append(output["bytes"])
    await player.disconnect()
    assert got == [frames[0], frames[2]]


async def test_spectators_cannot_steer(worker_slots):
    stage = await _stage(worker_slots)
    watcher = _socket(f"/ws/watch/{stage.session.id}/")
    assert (await watcher.connect(WAIT))[0]
    await watcher.send_to(text_data='{"type": "input", "seq": 1, "keys": ["w"]}')
    error = await _json(watcher, "error")
    await watcher.disconnect()
    assert error["code"] == "read_only"


async def test_ending_the_session_tells_the_player_and_closes(worker_slots):
    stage = await _stage(worker_slots)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = await _connected(stage, inbox)
        await sync_to_async(services.session_end)(session=stage.session, reason=EndReason.PLAYER)
        ended = await _status(socket, "ended")
        code = await _closed_with(socket)
        end = await inbox.next("session.end")
        await socket.disconnect()
    assert ended["reason"] == "player"
    assert code == 1000
    assert end["session_id"] == str(stage.session.id)


async def test_a_worker_failure_marks_the_session_failed(worker_slots):
    stage = await _stage(worker_slots)
    socket = _socket(stage.play_path, stage.key)
    assert (await socket.connect(WAIT))[0]
    await _json(socket, "status")
    await get_channel_layer().group_send(
        session_group(stage.session.id),
        {"type": "session.status", "state": "ended", "fps": 0.0, "reason": "bad_world"},
    )
    await _status(socket, "ended")
    await socket.disconnect()
    session = await sync_to_async(PlaySession.objects.get)(pk=stage.session.id)
    assert (session.status, session.end_reason) == (SessionStatus.FAILED, EndReason.FAILED)


async def test_a_dropped_player_keeps_the_session_and_resumes_it(worker_slots):
    stage = await _stage(worker_slots)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = await _connected(stage, inbox)
        await socket.disconnect()
        detach = await inbox.next("session.detach")
        left = await sync_to_async(PlaySession.objects.get)(pk=stage.session.id)
        again = await _connected(stage, inbox)
        await again.disconnect()
    back = await sync_to_async(PlaySession.objects.get)(pk=stage.session.id)
    assert detach["session_id"] == str(stage.session.id)
    assert left.is_active and left.disconnected_at is not None
    assert back.is_active


async def test_a_queued_player_sees_their_position_then_starts(worker_slots):
    first = await _stage(worker_slots, capacity=1)
    user = await sync_to_async(make_user)()
    world = await sync_to_async(make_world)()
    queued, _ = await sync_to_async(seats.session_create)(
        world_slug=world.slug, user=user, session_key="", client_ip="10.3.3.3"
    )
    assert queued.status == SessionStatus.QUEUED
    key = await sync_to_async(_cookie_for)(user)
    async with Inbox(get_channel_layer(), worker_channel(first.worker)) as inbox:
        socket = _socket(f"/ws/play/{queued.id}/", key)
        assert (await socket.connect(WAIT))[0]
        waiting = await _status(socket, "queued")
        await socket.send_to(text_data='{"type": "input", "seq": 1, "keys": ["w"]}')
        await socket.send_to(text_data='{"type": "prompt", "seq": 2, "text": "it snows"}')
        early = await _json(socket, "error")
        await sync_to_async(services.session_end)(session=first.session, reason=EndReason.PLAYER)
        await _status(socket, "starting")
        attach = await inbox.next("session.attach")
        held = await inbox.next("session.input")
        await socket.disconnect()
    assert waiting["position"] == 1
    assert attach["session_id"] == str(queued.id)
    # Keys held while waiting are applied from the first frame; events wait for a live world.
    assert (held["session_id"], held["keys"]) == (str(queued.id), ["w"])
    assert (early["seq"], early["code"]) == (2, "not_running")


async def test_an_idle_player_is_ended_by_the_idle_timeout(worker_slots, settings):
    settings.SESSION_IDLE_SECONDS = 1
    stage = await _stage(worker_slots)
    socket = _socket(stage.play_path, stage.key)
    assert (await socket.connect(WAIT))[0]
    ended = await _status(socket, "ended")
    code = await _closed_with(socket)
    await socket.disconnect()
    assert (ended["reason"], code) == ("idle", 1000)
    session = await sync_to_async(PlaySession.objects.get)(pk=stage.session.id)
    assert session.end_reason == EndReason.IDLE


async def test_a_player_who_does_not_come_back_is_ended_after_the_grace(worker_slots, settings):
    settings.SESSION_RECONNECT_GRACE_SECONDS = 1
    stage = await _stage(worker_slots)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = await _connected(stage, inbox)
        await socket.disconnect()
        end = await inbox.next("session.end")
    session = await sync_to_async(PlaySession.objects.get)(pk=stage.session.id)
    assert end["reason"] == EndReason.ABANDONED
    assert (session.status, session.end_reason) == (SessionStatus.ENDED, EndReason.ABANDONED)


async def test_a_second_socket_replaces_the_first_and_its_late_close_detaches_nothing(
    worker_slots,
):
    stage = await _stage(worker_slots)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        old = await _connected(stage, inbox)
        new = await _connected(stage, inbox)
        replaced = await _json(old, "error")
        code = await _closed_with(old)
        await old.disconnect()
        await new.send_to(text_data='{"type": "input", "seq": 8, "keys": ["s"]}')
        after = await inbox.next()
        await new.disconnect()
    assert (replaced["code"], code) == ("replaced", 4409)
    assert "another tab" in replaced["message"]  # the first tab is told why it lost control
    # The worker was never told to pause: the next thing it heard was the new socket's input.
    assert after["type"] == "session.input" and after["seq"] == 8


async def test_the_player_sees_the_viewer_count_rise_and_fall(worker_slots):
    stage = await _stage(worker_slots)
    player = _socket(stage.play_path, stage.key)
    assert (await player.connect(WAIT))[0]
    watchers = [_socket(f"/ws/watch/{stage.session.id}/") for _ in range(2)]
    for watcher in watchers:
        assert (await watcher.connect(WAIT))[0]
    counts = [(await _json(player, "status"))["viewers"]]
    while counts[-1] != 2:
        counts.append((await _json(player, "status"))["viewers"])
    await watchers[0].disconnect()
    while counts[-1] != 1:
        counts.append((await _json(player, "status"))["viewers"])
    await watchers[1].disconnect()
    await player.disconnect()
    session = await sync_to_async(PlaySession.objects.get)(pk=stage.session.id)
    assert counts[-1] == 1
    assert session.peak_viewers == 2


async def test_what_crashed_a_spectators_socket_is_refused_and_the_count_still_falls(
    worker_slots,
):
    # a 310-digit ping and a lone-surrogate vote killed the socket's task, which skipped
    # disconnect(): the viewer count never went down (anyone could inflate it)
    stage = await _stage(worker_slots)
    player = _socket(stage.play_path, stage.key)
    assert (await player.connect(WAIT))[0]
    watcher = _socket(f"/ws/watch/{stage.session.id}/")
    assert (await watcher.connect(WAIT))[0]
    while (await _json(player, "status"))["viewers"] != 1:
        pass
    codes = []
    for raw in ('{"type": "ping", "t": 1' + "0" * 310 + "}", '{"type": "vote", '
                '"choice_id": "\\ud800", "option": 1}'):  # fmt: skip
        await watcher.send_to(text_data=raw)
        codes.append((await _json(watcher, "error"))["code"])
    await watcher.disconnect()
    while (await _json(player, "status"))["viewers"] != 0:
        pass  # _json times out (and fails) if the count never falls
    await player.disconnect()
    assert codes == ["bad_ping", "bad_choice"]


async def test_a_message_that_fails_unforeseen_gets_an_error_and_the_socket_lives(
    worker_slots, monkeypatch
):
    def broken(text, field):
        raise RuntimeError("screening is down")

    monkeypatch.setattr(policy, "screen_play_text", broken)
    stage = await _stage(worker_slots)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = await _connected(stage, inbox)
        await socket.send_to(text_data='{"type": "prompt", "seq": 2, "text": "it snows"}')
        error = await _json(socket, "error")
        await socket.send_to(text_data='{"type": "ping", "t": 5}')
        pong = await _json(socket, "pong")
        await socket.disconnect()
    assert error["code"] == "internal" and error["message"]
    assert pong["t"] == 5


@sync_to_async
def _two_seats():
    """A shared session with its host in slot 0 and a guest in slot 1: their cookies, the
    guest's seat."""
    host, guest = make_user(), make_user()
    session, _ = seats.session_create(
        world_slug=make_world().slug, user=host, session_key="", client_ip="10.1.1.1", shared=True
    )
    _, seat, _ = seats.seat_join(
        session_id=session.id, user=guest, session_key="", client_ip="10.1.1.2"
    )
    return session, _cookie_for(host), _cookie_for(guest), seat


async def _presence(socket, **states) -> list[dict]:
    """The players of the next presence in which each seat is in the state given
    (``slot1="reconnecting"``); times out (and fails) if none comes."""
    while True:
        players = (await _json(socket, "presence"))["players"]
        now = {f"slot{p['slot']}": p["state"] for p in players}
        if all(now.get(slot) == state for slot, state in states.items()):
            return players


async def test_a_player_who_leaves_a_shared_world_has_their_socket_ended(worker_slots):
    # the Leave button's DELETE freed the seat but the socket stayed open: its page kept
    # hearing the session's "live" status and went back to live a second after leaving
    worker_slots.add(capacity=2)
    session, host_key, guest_key, guest_seat = await _two_seats()
    path = f"/ws/play/{session.id}/"
    host, guest = _socket(path, host_key), _socket(path, guest_key)
    assert (await host.connect(WAIT))[0] and (await guest.connect(WAIT))[0]
    await _presence(host, slot1="connected")
    await sync_to_async(seats.seat_leave)(seat=guest_seat, reason=EndReason.PLAYER)
    ended = await _status(guest, "ended")
    code = await _closed_with(guest)
    presence = await _json(host, "presence")
    await host.send_to(text_data='{"type": "ping", "t": 1}')
    pong = await _json(host, "pong")
    await host.disconnect()
    assert (ended["reason"], code) == ("left", 4410)
    assert [p["slot"] for p in presence["players"]] == [0] and pong["t"] == 1


async def test_a_player_whose_socket_closed_shows_as_reconnecting_until_they_are_back(
    worker_slots,
):
    # presence said who held a seat, not who was there: a player gone within the reconnect
    # grace looked the same as one playing
    worker_slots.add(capacity=2)
    session, host_key, guest_key, _ = await _two_seats()
    path = f"/ws/play/{session.id}/"
    host = _socket(path, host_key)
    assert (await host.connect(WAIT))[0]
    first = await _json(host, "status")
    guest = _socket(path, guest_key)
    assert (await guest.connect(WAIT))[0]
    await _presence(host, slot1="connected")
    watcher = _socket(f"/ws/watch/{session.id}/")
    assert (await watcher.connect(WAIT))[0]
    await guest.disconnect()
    away = await _presence(host, slot1="reconnecting")
    watched = await _presence(watcher, slot1="reconnecting")
    again = _socket(path, guest_key)
    assert (await again.connect(WAIT))[0]
    back = await _presence(host, slot1="connected")
    for socket in (again, watcher, host):
        await socket.disconnect()
    # the host's own first status already counts them in; the guest had no socket yet
    assert [(p["slot"], p["state"], p["you"]) for p in first["players"]] == [
        (0, "connected", True),
        (1, "joining", False),
    ]
    # still seated (the grace keeps the seat), and said to be away, to players and spectators
    assert [(p["slot"], p["state"]) for p in away] == [(0, "connected"), (1, "reconnecting")]
    assert [(p["slot"], p["state"]) for p in watched] == [(0, "connected"), (1, "reconnecting")]
    assert [(p["slot"], p["state"]) for p in back] == [(0, "connected"), (1, "connected")]


# --- story picks and dialogue ----------------------------------------------------------------

STORY = {"category": "stories", "story_opening": "The boats are still out."}
CHARACTER = {
    "category": "characters",
    "character_name": "Old Tom",
    "character_persona": "A gruff marsh ferryman.",
    "character_greeting": "Hmph.",
    "character_examples": "Mind the eels.\n\n  Two coins for the crossing.  \n",
}


async def test_the_worker_gets_the_story_opening_and_a_pick(worker_slots):
    stage = await _stage(worker_slots, **STORY)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = _socket(stage.play_path, stage.key)
        assert (await socket.connect(WAIT))[0]
        attach = await inbox.next("session.attach")
        await socket.send_to(text_data='{"type": "choose", "choice_id": "c1", "option": 1}')
        pick = await inbox.next("session.choose")
        await socket.send_to(text_data='{"type": "say", "text": "hello"}')
        error = await _json(socket, "error")
        await socket.disconnect()
    assert (attach["category"], attach["story_opening"]) == ("stories", "The boats are still out.")
    assert pick == {
        "type": "session.choose",
        "session_id": str(stage.session.id),
        "choice_id": "c1",
        "option": 1,
        "slot": 0,
    }
    assert error["code"] == "unsupported"  # no one to talk to in a story


async def test_spectators_without_an_account_vote_once_per_address(worker_slots):
    # a fresh socket (or cookie) was a fresh voter: one client could stuff the audience
    stage = await _stage(worker_slots, **STORY)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        player = await _connected(stage, inbox)
        voters = []
        for address in ("203.0.113.5", "203.0.113.5", "198.51.100.7"):
            watcher = _socket(f"/ws/watch/{stage.session.id}/")
            watcher.scope["client"] = (address, 40000 + len(voters))
            assert (await watcher.connect(WAIT))[0]
            await watcher.send_to(text_data='{"type": "vote", "choice_id": "c1", "option": 1}')
            voters.append((await inbox.next("session.vote"))["voter"])
            await watcher.disconnect()
        await player.disconnect()
    assert voters == ["ip:203.0.113.5", "ip:203.0.113.5", "ip:198.51.100.7"]


async def test_the_worker_gets_the_character_card_and_a_line(worker_slots):
    stage = await _stage(worker_slots, **CHARACTER)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = _socket(stage.play_path, stage.key)
        assert (await socket.connect(WAIT))[0]
        attach = await inbox.next("session.attach")
        await socket.send_to(text_data='{"type": "say", "text": "  who are you?  "}')
        line = await inbox.next("session.say")
        await socket.send_to(text_data='{"type": "choose", "choice_id": "c1", "option": 0}')
        error = await _json(socket, "error")
        await socket.disconnect()
    assert attach["category"] == "characters"
    assert attach["character"] == {
        "name": "Old Tom",
        "persona": "A gruff marsh ferryman.",
        "greeting": "Hmph.",
        "examples": ["Mind the eels.", "Two coins for the crossing."],
    }
    assert line == {
        "type": "session.say",
        "session_id": str(stage.session.id),
        "text": "who are you?",
        "slot": 0,
        "refused": False,
    }
    assert error["code"] == "unsupported"  # no story to pick from


async def test_a_spectator_of_a_character_is_sent_the_talk_so_far_alone(worker_slots):
    # a spectator who came late (or reloaded) saw an empty chat beside a conversation
    stage = await _stage(worker_slots, **CHARACTER)
    layer = get_channel_layer()
    async with Inbox(layer, worker_channel(stage.worker)) as inbox:
        player = await _connected(stage, inbox)
        watcher = _socket(f"/ws/watch/{stage.session.id}/")
        assert (await watcher.connect(WAIT))[0]
        watch = await inbox.next("session.watch")
        # The worker answers that channel alone, as it does (test_worker_narrative.py).
        replay = {"type": "session.say", "speaker": "Old Tom", "text": "Hmph.", "history": 0}
        await layer.send(watch["channel"], replay)
        seen = await _json(watcher, "say")
        await watcher.disconnect()
        await player.disconnect()
    assert watch["session_id"] == str(stage.session.id)
    assert seen == {"type": "say", "speaker": "Old Tom", "text": "Hmph.", "history": 0}


async def test_a_spectator_of_any_world_asks_the_worker_for_the_last_events(worker_slots):
    stage = await _stage(worker_slots)  # a game: no talk, but the world changes all the same
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        player = await _connected(stage, inbox)
        watcher = _socket(f"/ws/watch/{stage.session.id}/")
        assert (await watcher.connect(WAIT))[0]
        watch = await inbox.next("session.watch")
        await watcher.disconnect()
        await player.disconnect()
    assert watch["session_id"] == str(stage.session.id) and watch["channel"]


async def test_a_game_world_takes_no_picks_or_dialogue(worker_slots):
    stage = await _stage(worker_slots)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = await _connected(stage, inbox)
        codes = []
        for raw in (
            '{"type": "choose", "choice_id": "c1", "option": 0}',
            '{"type": "say", "text": "hi"}',
        ):
            await socket.send_to(text_data=raw)
            codes.append((await _json(socket, "error"))["code"])
        await socket.send_to(text_data='{"type": "input", "seq": 3, "keys": []}')
        first_after = await inbox.next()
        await socket.disconnect()
    assert codes == ["unsupported", "unsupported"]
    assert first_after["type"] == "session.input"


async def test_a_blocked_line_is_refused_recorded_and_its_words_never_reach_the_worker(
    worker_slots,
):
    from worlds.moderation.selectors import recent_prompts

    stage = await _stage(worker_slots, **CHARACTER)
    async with Inbox(get_channel_layer(), worker_channel(stage.worker)) as inbox:
        socket = await _connected(stage, inbox)
        await socket.send_to(text_data='{"type": "say", "text": "send nudes"}')
        error = await _json(socket, "error")
        forwarded = await inbox.next()
        await socket.send_to(text_data='{"type": "input", "seq": 5, "keys": []}')
        first_after = await inbox.next()
        await socket.disconnect()
    assert error["code"] == "blocked" and error["message"]
    # the character is told to refuse, in its own voice, without the words
    assert forwarded["type"] == "session.say" and forwarded["refused"] is True
    assert forwarded["text"] is None and "nudes" not in json.dumps(forwarded)
    assert first_after["type"] == "session.input"
    recent = await sync_to_async(recent_prompts)(session_id=stage.session.id)
    assert recent[0]["text"] == "send nudes" and recent[0]["status"] == "rejected"


async def test_choices_and_lines_reach_the_player_and_spectators_but_errors_only_the_player(
    worker_slots,
):
    stage = await _stage(worker_slots, **STORY)
    player, watcher = await _player_and_watcher(stage)
    group = session_group(stage.session.id)
    layer = get_channel_layer()
    choices = {
        "choice_id": "c3",
        "options": ["Wait", "Run"],
        "story": ["The boats...", "You wait."],
    }
    await layer.group_send(group, {"type": "session.choices", **choices})
    await layer.group_send(
        group, {"type": "session.say", "speaker": "player", "text": "hi", "slot": 0}
    )
    await layer.group_send(group, {"type": "session.error", "code": "stale_choice", "message": "x"})
    seen = {}
    for name, socket in (("player", player), ("watcher", watcher)):
        seen[name] = [await _json(socket, "choices"), await _json(socket, "say")]
    player_error = await _json(player, "error")
    await watcher.send_to(text_data='{"type": "choose", "choice_id": "c3", "option": 0}')
    watcher_error = await _json(watcher, "error")
    await watcher.disconnect()
    await player.disconnect()
    counts = {"votes": [0, 0], "audience": [0, 0], "closes_in": None, "voted": None, "picked": ""}
    counts["chosen"] = []  # the worker's message named no picks
    said = {"type": "say", "speaker": "player", "text": "hi", "slot": 0}
    expected = [{"type": "choices", **choices, **counts}, {**said, "you": True}]
    # Only the player's own line is "you" to them; the spectator sits nowhere.
    assert seen == {"player": expected, "watcher": [expected[0], {**said, "you": False}]}
    assert player_error["code"] == "stale_choice"
    assert watcher_error["code"] == "read_only"


async def test_partial_replies_and_who_wrote_them_reach_the_player_and_spectators(worker_slots):
    stage = await _stage(worker_slots, **CHARACTER)
    player, watcher = await _player_and_watcher(stage)
    group = session_group(stage.session.id)
    layer = get_channel_layer()
    partial = {"type": "session.say", "speaker": "Old Tom", "text": "Hmph. The", "partial": True}
    await layer.group_send(group, partial)
    await layer.group_send(group, {**partial, "text": "Hmph. The reeds.", "partial": False})
    await layer.group_send(
        group, {"type": "session.status", "state": "live", "fps": 24.0, "narrator": "embedded:x"}
    )
    seen = {}
    for name, socket in (("player", player), ("watcher", watcher)):
        lines = [await _json(socket, "say"), await _json(socket, "say")]
        seen[name] = (lines, (await _status(socket, "live")).get("narrator"))
    await watcher.disconnect()
    await player.disconnect()
    expected = [
        {"type": "say", "speaker": "Old Tom", "text": "Hmph. The", "partial": True},
        {"type": "say", "speaker": "Old Tom", "text": "Hmph. The reeds."},
    ]
    assert seen == {"player": (expected, "embedded:x"), "watcher": (expected, "embedded:x")}


async def test_the_talk_replayed_to_a_returning_player_reaches_only_them(worker_slots):
    stage = await _stage(worker_slots, **CHARACTER)
    player, watcher = await _player_and_watcher(stage)
    group, layer = session_group(stage.session.id), get_channel_layer()
    replay = {"type": "session.say", "speaker": "Old Tom", "text": "Hmph.", "history": 0}
    await layer.group_send(group, {**replay, "only_slot": 0})
    await layer.group_send(group, {"type": "session.say", "speaker": "Old Tom", "text": "Now."})
    mine = [await _json(player, "say"), await _json(player, "say")]
    theirs = await _json(watcher, "say")
    await watcher.disconnect()
    await player.disconnect()
    assert [(m["text"], m.get("history")) for m in mine] == [("Hmph.", 0), ("Now.", None)]
    assert theirs["text"] == "Now."  # a spectator is not sent another's replay
