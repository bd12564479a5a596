"""Live oversight: every running session, public and private, and ending one with a reason."""

from sessions.models import SessionStatus
from tests.worlds.factories import make_user
from tests.worlds.moderation.factories import make_session


def test_the_live_page_lists_public_and_private_running_sessions(mod_client, world, creator):
    other = make_user("night-owl")
    public = make_session(world=world, player=creator)
    private = make_session(world=world, player=other, is_public=False)
    ended = make_session(world=world, player=make_user(), status=SessionStatus.ENDED)
    html = mod_client.get("/moderation/live/").content.decode()
    assert str(public.pk) in html and str(private.pk) in html
    assert str(ended.pk) not in html
    assert "night-owl" in html and "private" in html


def test_a_moderator_ends_a_session_from_the_live_page(mod_client, world, creator):
    session = make_session(world=world, player=creator, is_public=False)
    response = mod_client.post(
        "/moderation/act/",
        {
            "kind": "end_session",
            "target_type": "session",
            "target_id": str(session.pk),
            "reason": "hateful prompts",
            "next": "/moderation/live/",
        },
    )
    assert response.status_code == 302 and response["Location"] == "/moderation/live/"
    session.refresh_from_db()
    assert (session.status, session.end_reason) == (SessionStatus.ENDED, "moderator")


def test_the_live_api_lists_running_sessions(api_as, moderator, world, creator):
    session = make_session(world=world, player=creator, is_public=False)
    body = api_as(moderator).get("/api/moderation/live/").json()
    assert [(s["id"], s["player"], s["is_public"]) for s in body] == [
        (str(session.pk), "creator", False)
    ]


def test_the_live_page_shows_the_latest_prompts_with_refusals(mod_client, world, creator):
    from worlds.moderation.policy import prompt_record

    session = make_session(world=world, player=creator)
    prompt_record(session_id=session.pk, text="it starts to snow", status="sent")
    prompt_record(session_id=session.pk, text="something refused", status="rejected")
    html = mod_client.get("/moderation/live/").content.decode()
    assert "it starts to snow" in html
    assert "something refused (rejected)" in html
    assert html.index("something refused") < html.index("it starts to snow")  # newest first


def test_moderators_can_watch_a_private_session_and_others_cannot(client, mod_client, world):
    player = make_user("private-player")
    session = make_session(world=world, player=player, is_public=False)
    assert mod_client.get(f"/watch/{session.pk}/").status_code == 200
    client.force_login(make_user("curious"))
    assert client.get(f"/watch/{session.pk}/").status_code == 404


def test_the_live_page_lists_a_shared_sessions_players_with_a_remove_button(
    mod_client, world, creator
):
    from sessions.models import Seat

    session = make_session(world=world, player=creator)
    Seat.objects.create(session=session, slot=0, name="creator", user=creator)
    Seat.objects.create(session=session, slot=1, name="Loud Guest", anon_key="k")
    Seat.objects.create(
        session=session, slot=2, name="Gone", anon_key="g", left_at=session.created_at
    )
    html = mod_client.get("/moderation/live/").content.decode()
    assert "Loud Guest" in html and "Gone" not in html
    assert f"/api/sessions/{session.pk}/players/1/remove/" in html
    assert "background: #2850e6" in html  # slot 1's avatar colour beside the name
