"""World pages: detail, publish/edit/remix forms, like, owner actions, placeholders."""

import pytest

from tests.worlds.factories import image_bytes, make_world, upload
from worlds.models import Like, World, WorldStatus

FORM = {
    "title": "Glow Caves",
    "category": "games",
    "prompt": "an underground cave with glowing mushrooms",
    "description": "Find the way out.",
    "seed": "",
    "visibility": "published",
}


def test_detail_shows_the_world_and_a_play_button(client, world):
    page = client.get(f"/w/{world.slug}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Snowy Pines" in html
    assert f'<a class="btn btn-play" href="/play/{world.slug}/">Play</a>' in html


def test_detail_of_another_users_draft_is_404(outsider_client, draft):
    assert outsider_client.get(f"/w/{draft.slug}/").status_code == 404


def test_detail_of_an_own_draft_says_it_is_a_draft(owner_client, draft):
    page = owner_client.get(f"/w/{draft.slug}/")
    assert page.status_code == 200
    assert "only you can see and play it" in page.content.decode()


def test_a_removed_world_is_marked_removed_for_its_creator_and_404_for_others(
    owner, outsider, client
):
    world = make_world(owner, status=WorldStatus.REMOVED)
    client.force_login(owner)
    page = client.get(f"/w/{world.slug}/")
    assert "removed by moderation" in page.content.decode()
    assert "btn-play" not in page.content.decode()
    client.force_login(outsider)
    assert client.get(f"/w/{world.slug}/").status_code == 404


def test_titles_are_escaped_everywhere(client, owner):
    world = make_world(owner, title="<script>alert(1)</script>", description="<b>bold</b>")
    for url in ("/", f"/w/{world.slug}/", "/c/games/", "/search/?q=pine", f"/u/{owner}/"):
        html = client.get(url).content.decode()
        assert "<script>alert(1)</script>" not in html, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, url


def test_publishing_needs_an_account(client):
    page = client.get("/publish/")
    assert page.status_code == 302
    assert page["Location"].startswith("/accounts/login/")


def test_the_publish_form_creates_and_publishes_a_world(owner_client, owner):
    page = owner_client.post("/publish/", FORM)
    world = World.objects.get()
    assert page.status_code == 302
    assert page["Location"] == f"/w/{world.slug}/"
    assert world.creator == owner
    assert world.status == WorldStatus.PUBLISHED


def test_the_publish_form_sent_twice_makes_one_world(owner_client, owner):
    # a double click or the back button sent it again: that made a second copy ("…-9a4e52")
    page = owner_client.get("/publish/")
    submit_id = page.context["submit_id"]
    assert f'name="submit_id" value="{submit_id}"' in page.content.decode()
    first = owner_client.post("/publish/", FORM | {"submit_id": submit_id})
    second = owner_client.post("/publish/", FORM | {"submit_id": submit_id})
    world = World.objects.get()
    assert first["Location"] == second["Location"] == f"/w/{world.slug}/"
    # a fresh form page is a fresh world
    again = owner_client.get("/publish/").context["submit_id"]
    assert again != submit_id
    owner_client.post("/publish/", FORM | {"submit_id": again})
    assert World.objects.filter(creator=owner).count() == 2


def test_a_form_sent_with_errors_then_fixed_goes_through_once(owner_client):
    submit_id = owner_client.get("/publish/").context["submit_id"]
    bad = owner_client.post("/publish/", FORM | {"title": "", "submit_id": submit_id})
    assert bad.status_code == 400 and bad.context["submit_id"] == submit_id
    good = owner_client.post("/publish/", FORM | {"submit_id": submit_id})
    assert good.status_code == 302 and World.objects.count() == 1


def test_the_publish_form_saves_a_draft(owner_client):
    owner_client.post("/publish/", FORM | {"visibility": "draft"})
    assert World.objects.get().status == WorldStatus.DRAFT


def test_the_publish_form_takes_a_cover(owner_client):
    cover = upload(image_bytes("PNG"), "c.png", "image/png")
    owner_client.post("/publish/", FORM | {"cover": cover})
    world = World.objects.get()
    assert world.cover.name.endswith(".png")
    page = owner_client.get(f"/w/{world.slug}/")
    assert world.cover.url in page.content.decode()


def test_an_invalid_form_is_400_with_field_errors_and_saves_nothing(owner_client):
    page = owner_client.post("/publish/", FORM | {"title": "", "category": "casino"})
    assert page.status_code == 400
    assert page.context["form"].errors.keys() >= {"title", "category"}
    assert not World.objects.exists()


def test_a_non_image_cover_is_rejected_with_a_message(owner_client):
    fake = upload(b"MZ\x90\x00 definitely not a picture", "cover.jpg", "image/jpeg")
    page = owner_client.post("/publish/", FORM | {"cover": fake})
    assert page.status_code == 400
    assert "must be a JPEG, PNG or WebP image" in page.content.decode()
    assert not World.objects.exists()


def test_blocked_text_is_a_field_error(owner_client):
    page = owner_client.post("/publish/", FORM | {"prompt": "behead the villagers"})
    assert page.status_code == 400
    assert "refused" in " ".join(page.context["form"].errors["prompt"])
    assert not World.objects.exists()


def test_held_text_goes_to_review_instead_of_live(owner_client):
    owner_client.post("/publish/", FORM | {"description": "a gory battlefield"})
    assert World.objects.get().status == WorldStatus.IN_REVIEW


def test_edit_form_saves_a_new_version(owner_client, world):
    page = owner_client.post(
        f"/w/{world.slug}/edit/", FORM | {"title": "Snowy Pines", "prompt": "pines at night"}
    )
    assert page.status_code == 302
    world.refresh_from_db()
    assert world.prompt == "pines at night"
    assert world.current_version.number == 2


def test_editing_another_users_world_is_403_and_changes_nothing(outsider_client, world):
    assert outsider_client.get(f"/w/{world.slug}/edit/").status_code == 403
    page = outsider_client.post(f"/w/{world.slug}/edit/", FORM | {"title": "Hijacked"})
    assert page.status_code == 403
    world.refresh_from_db()
    assert world.title == "Snowy Pines"


def test_editing_another_users_draft_is_404(outsider_client, draft):
    assert outsider_client.post(f"/w/{draft.slug}/edit/", FORM).status_code == 404


def test_remix_form_is_prefilled_and_creates_a_linked_world(outsider_client, world, outsider):
    page = outsider_client.get(f"/w/{world.slug}/remix/")
    assert page.context["form"].initial["prompt"] == world.prompt
    outsider_client.post(f"/w/{world.slug}/remix/", FORM | {"title": "My Pines"})
    remix = World.objects.get(creator=outsider)
    assert remix.remix_of == world
    detail = outsider_client.get(f"/w/{remix.slug}/").content.decode()
    assert "remix of" in detail


def test_like_toggles(outsider_client, world):
    outsider_client.post(f"/w/{world.slug}/like/")
    world.refresh_from_db()
    assert world.like_count == 1
    outsider_client.post(f"/w/{world.slug}/like/")
    world.refresh_from_db()
    assert world.like_count == 0


def test_like_needs_an_account_and_a_post(client, world):
    assert client.post(f"/w/{world.slug}/like/").status_code == 302
    assert not Like.objects.exists()
    client.force_login(world.creator)
    assert client.get(f"/w/{world.slug}/like/").status_code == 405


def test_forms_are_csrf_protected(owner):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    assert strict.post("/publish/", FORM).status_code == 403
    assert not World.objects.exists()
    page = strict.get("/publish/")
    assert 'name="csrfmiddlewaretoken"' in page.content.decode()


def test_owner_can_unpublish_and_publish_again(owner_client, world):
    owner_client.post(f"/w/{world.slug}/unpublish/")
    world.refresh_from_db()
    assert world.status == WorldStatus.DRAFT
    owner_client.post(f"/w/{world.slug}/publish/")
    world.refresh_from_db()
    assert world.status == WorldStatus.PUBLISHED


def test_someone_else_cannot_unpublish(outsider_client, world):
    assert outsider_client.post(f"/w/{world.slug}/unpublish/").status_code == 403
    world.refresh_from_db()
    assert world.status == WorldStatus.PUBLISHED


def test_owner_can_delete(owner_client, world):
    assert owner_client.post(f"/w/{world.slug}/delete/").status_code == 302
    assert not World.objects.exists()


def test_someone_else_cannot_delete(outsider_client, world):
    assert outsider_client.post(f"/w/{world.slug}/delete/").status_code == 403
    assert World.objects.exists()


def test_a_world_without_cover_uses_the_placeholder(client, world):
    assert world.cover_url == f"/covers/placeholder/games/{world.slug}.svg"
    svg = client.get(world.cover_url)
    assert svg.status_code == 200
    assert svg["Content-Type"] == "image/svg+xml"
    assert svg.content.startswith(b"<svg")


@pytest.mark.parametrize("category", ["casino", "GAMES"])
def test_placeholder_for_an_unknown_category_is_404(client, category):
    assert client.get(f"/covers/placeholder/{category}/x.svg").status_code == 404


def test_the_403_page_says_why(outsider_client, world, settings):
    settings.DEBUG = False
    page = outsider_client.get(f"/w/{world.slug}/edit/")
    assert page.status_code == 403
    assert "Only the creator can change this world." in page.content.decode()


def test_a_suspended_creator_cannot_publish_and_nothing_is_saved(owner_client, owner):
    from worlds.moderation.models import Suspension

    Suspension.objects.create(user=owner, reason="spam")
    page = owner_client.post("/publish/", FORM)
    assert page.status_code == 403
    assert not World.objects.exists()  # the draft made before the refused publish is undone


def test_a_form_refused_by_a_rate_limit_can_be_sent_again_later(owner_client, settings):
    settings.WORLDS_CREATED_PER_HOUR = 0
    submit_id = owner_client.get("/publish/").context["submit_id"]
    assert owner_client.post("/publish/", FORM | {"submit_id": submit_id}).status_code == 429
    settings.WORLDS_CREATED_PER_HOUR = 1000
    # the first sending failed: the same form page goes through, not "still being saved"
    assert owner_client.post("/publish/", FORM | {"submit_id": submit_id}).status_code == 302
    assert World.objects.count() == 1
