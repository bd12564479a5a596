"""Moderators watch any running session over the watch socket, private ones included."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from gallery.asgi import application
from sessions.protocol import CLOSE_NOT_FOUND
from tests.worlds.factories import make_user, make_world
from tests.worlds.moderation.conftest import moderators_group
from tests.worlds.moderation.factories import make_session

pytestmark = pytest.mark.django_db(transaction=True)


def _arrange() -> tuple[str, str, str]:
    moderator = make_user("watcher-mod")
    moderator.groups.add(moderators_group())
    outsider = make_user("watcher-nosy")
    world = make_world(make_user("watcher-creator"))
    session = make_session(world=world, player=make_user("watcher-player"), is_public=False)
    return str(session.pk), _cookie(moderator), _cookie(outsider)


def _cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def _socket(session_id: str, cookie: str) -> WebsocketCommunicator:
    headers = [
        (b"origin", b"http://testserver"),
        (b"host", b"testserver"),
        (b"cookie", f"sessionid={cookie}".encode()),
    ]
    return WebsocketCommunicator(application, f"/ws/watch/{session_id}/", headers=headers)


async def test_a_moderator_watches_a_private_session_and_others_are_refused():
    session_id, mod_cookie, outsider_cookie = await sync_to_async(_arrange)()
    nosy = _socket(session_id, outsider_cookie)
    connected, _ = await nosy.connect()
    assert connected
    closed = await nosy.receive_output(10)
    assert (closed["type"], closed.get("code")) == ("websocket.close", CLOSE_NOT_FOUND)
    await nosy.disconnect()

    watcher = _socket(session_id, mod_cookie)
    connected, _ = await watcher.connect()
    assert connected
    first = await watcher.receive_output(10)
    assert first["type"] == "websocket.send", first  # a status, not a close: watching
    assert '"status"' in first["text"]
    await watcher.disconnect()


async def test_the_player_is_told_the_moderators_reason_when_their_session_is_ended():
    from channels.layers import get_channel_layer

    from inference.serving.messages import session_group
    from worlds.moderation import services

    def arrange():
        moderator = make_user("ender-mod")
        moderator.groups.add(moderators_group())
        world = make_world(make_user("ender-creator"))
        return moderator, make_session(world=world, player=make_user("ender-player"))

    moderator, session = await sync_to_async(arrange)()
    layer = get_channel_layer()
    inbox = await layer.new_channel()
    await layer.group_add(session_group(session.pk), inbox)
    await sync_to_async(services.action_take)(
        moderator=moderator, kind="end_session", target_type="session",
        target_id=str(session.pk), reason="hateful prompts",
    )  # fmt: skip
    message = await asyncio.wait_for(layer.receive(inbox), 10)
    assert message["type"] == "session.status" and message["state"] == "ended"
    assert "hateful prompts" in message["reason"]
    await layer.group_discard(session_group(session.pk), inbox)
