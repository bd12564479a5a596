"""Sign up, log in, log out, profiles."""

from django.test import Client

from gallery.models import User
from tests.worlds.factories import make_world

SIGNUP = {
    "username": "newcomer",
    "display_name": "New Comer",
    "email": "new@example.com",
    "password1": "a-long-unusual-passphrase-7",
    "password2": "a-long-unusual-passphrase-7",
}


def test_sign_up_creates_an_account_and_logs_in(client, db):
    page = client.post("/accounts/signup/", SIGNUP)
    assert page.status_code == 302
    user = User.objects.get(username="newcomer")
    assert user.display_name == "New Comer"
    assert client.get("/api/me/").json()["username"] == "newcomer"


def test_sign_up_rejects_mismatched_and_weak_passwords(client, db):
    page = client.post("/accounts/signup/", SIGNUP | {"password2": "different-thing-8"})
    assert page.status_code == 400
    assert "password2" in page.context["form"].errors
    page = client.post("/accounts/signup/", SIGNUP | {"password1": "123", "password2": "123"})
    assert page.status_code == 400
    assert not User.objects.exists()


def test_sign_up_rejects_a_taken_username(client, owner):
    page = client.post("/accounts/signup/", SIGNUP | {"username": "owner"})
    assert page.status_code == 400
    assert "username" in page.context["form"].errors


def test_a_username_that_reads_as_another_members_is_refused(client, owner):
    # "οwner" (a Greek omicron) registered beside "owner" and could pass for them
    for lookalike in ("οwner", "оwner", "0wner", "OWNER", "ownér", "ＯＷＮＥＲ"):
        page = client.post("/accounts/signup/", SIGNUP | {"username": lookalike})
        assert page.status_code == 400, lookalike
        errors = str(page.context["form"].errors["username"])  # Django's own for "OWNER"
        assert "looks like another member" in errors or "already exists" in errors
    assert list(User.objects.values_list("username", flat=True)) == ["owner"]
    page = client.post("/accounts/signup/", SIGNUP | {"username": "owner2"})  # another name
    assert page.status_code == 302


def test_a_display_name_cannot_be_another_members_username(client, owner, outsider):
    page = client.post("/accounts/signup/", SIGNUP | {"display_name": "Οwner"})
    assert page.status_code == 400
    assert "display_name" in page.context["form"].errors
    assert not User.objects.filter(username="newcomer").exists()
    for user, name in ((outsider, "owner"), (owner, "OWNER")):
        editor = Client()
        editor.force_login(user)
        editor.post("/accounts/profile/", {"display_name": name, "bio": ""})
    outsider.refresh_from_db()
    owner.refresh_from_db()
    assert outsider.display_name != "owner"
    assert owner.display_name == "OWNER"  # one's own username, written another way, is one's own


def test_sign_up_screens_public_names(client, db):
    page = client.post("/accounts/signup/", SIGNUP | {"display_name": "behead the villagers"})
    assert page.status_code == 400
    assert "display_name" in page.context["form"].errors
    assert not User.objects.exists()


def test_sign_up_ignores_an_offsite_next(client, db):
    page = client.post("/accounts/signup/?next=https://evil.example/", SIGNUP)
    assert page["Location"] == "/"


def test_login_and_logout(client, owner):
    bad = client.post("/accounts/login/", {"username": "owner", "password": "wrong"})
    assert bad.status_code == 400
    good = client.post("/accounts/login/", {"username": "owner", "password": "correct-horse-9"})
    assert good.status_code == 302
    assert client.get("/api/me/").status_code == 200
    client.post("/accounts/logout/")
    assert client.get("/api/me/").status_code in (401, 403)


def test_login_form_is_csrf_protected(owner):
    strict = Client(enforce_csrf_checks=True)
    page = strict.post("/accounts/login/", {"username": "owner", "password": "correct-horse-9"})
    assert page.status_code == 403


def test_profile_lists_published_worlds_to_visitors_and_drafts_to_the_owner(client, owner):
    make_world(owner, title="Public One")
    make_world(owner, title="Hidden Draft", status="draft")
    html = client.get("/u/owner/").content.decode()
    assert "Public One" in html
    assert "Hidden Draft" not in html
    client.force_login(owner)
    assert "Hidden Draft" in client.get("/u/owner/").content.decode()


def test_profile_of_an_unknown_user_is_404(client, db):
    assert client.get("/u/nobody/").status_code == 404


def test_profile_edit_saves_and_escapes(owner_client, owner):
    owner_client.post(
        "/accounts/profile/",
        {"display_name": "<em>Owen Mapmaker</em>", "bio": "I make <b>worlds</b>"},
    )
    owner.refresh_from_db()
    assert owner.display_name == "<em>Owen Mapmaker</em>"
    html = owner_client.get("/u/owner/").content.decode()
    assert "&lt;em&gt;Owen Mapmaker&lt;/em&gt;" in html
    assert "<b>worlds</b>" not in html


def test_profile_edit_needs_a_login(client, db):
    assert client.get("/accounts/profile/").status_code == 302
