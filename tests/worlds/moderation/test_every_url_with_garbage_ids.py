"""Every moderation page and API answers malformed or foreign ids with a 4xx (or a page that
ignores them), never a 5xx: as a moderator, as a signed-in user and signed out.

The queue is walked with reports that already hold such ids: reports arrive through the API and
the admin, and a world report holding its world's slug made /moderation/ answer 500.
"""

import json
import uuid
from urllib.parse import quote, urlencode

import pytest
from django.test import Client

from sessions import urls as play_urls
from tests.worlds.factories import make_world
from tests.worlds.moderation.factories import make_session
from worlds.models import WorldStatus
from worlds.moderation import urls as moderation_urls
from worlds.moderation.models import Report, ReportStatus, TargetType

pytestmark = pytest.mark.django_db

# Moderation's own routes, and those of live play where moderators act (remove a player,
# watch a private session).
ROUTES = moderation_urls.urlpatterns + [
    p for p in play_urls.urlpatterns if p.name in {"api-session-remove-player", "play-watch"}
]
MODERATORS_ONLY = {p.name for p in ROUTES if p.name.startswith(("moderation-", "api-moderation"))}
TARGET_TYPES = [*TargetType.values, "planet"]
KINDS = ["remove", "unlist", "restore", "dismiss", "warn", "suspend", "unsuspend", "end_session"]


@pytest.fixture
def ids(world, outsider) -> list[str]:
    """Malformed ids, ids of nothing, and ids of things that are someone else's."""
    foreign_world = make_world(outsider, status=WorldStatus.DRAFT)
    private = make_session(world=foreign_world, player=outsider, is_public=False)
    return [
        *("²", "abc", "-1", "0", " ", "x" * 300, "\x00"),
        *("99999999999999999999", str(2**63), str(uuid.uuid4())),
        *(world.slug, str(world.pk), foreign_world.slug, str(foreign_world.pk)),
        *(str(private.pk), str(outsider.pk), outsider.username),
    ]


def _with_garbage_reports(reporter, ids: list[str]) -> None:
    """Open reports naming a world, a user and a session by every id a row can hold
    (PostgreSQL text holds no NUL), as older code or the admin could leave them."""
    reports = [
        Report(reporter=reporter, target_type=t, target_id=i[:200], reason="spam")
        for t in (TargetType.WORLD, TargetType.USER, TargetType.SESSION)
        for i in ids
        if "\x00" not in i
    ]
    assert len(reports) <= 50, "the queue shows 50 targets: the rest would go unread"
    Report.objects.bulk_create(reports)


def _fill(pattern: str, value: str) -> str:
    """The route with every parameter set to `value` (the resolver decides what matches)."""
    out, text = "/", pattern
    while "<" in text:
        head, _, rest = text.partition("<")
        out += head + quote(value, safe="")
        text = rest.partition(">")[2]
    return out + text


def _requests(route, value: str, n: int):
    """(method, path, body, content type) for one id: a GET carrying it in every parameter a
    page or API reads, and a POST naming it as each target type."""
    path = _fill(str(route.pattern), value)
    query = {k: value for k in ("target_type", "target_id", "actor", "action", "page", "next")}
    yield "get", f"{path}?{urlencode(query)}", None, None
    for i, target_type in enumerate(TARGET_TYPES):
        body = {
            "target_type": target_type,
            "target_id": value,
            "world": value,
            "session": value,
            "player": value,
            "kind": KINDS[(n + i) % len(KINDS)],
            "reason": "spam",
            "text": "you are all idiots",
            "duration_days": value,
            "next": value,
        }
        if path.startswith("/api/"):
            yield "post", path, json.dumps(body), "application/json"
        else:
            yield "post", path, body, None


def _walk(client: Client, route, ids: list[str]) -> list[tuple[str, str, int]]:
    answers = []
    for n, value in enumerate(ids):
        for method, path, body, content_type in _requests(route, value, n):
            if method == "get":
                response = client.get(path)
            elif content_type:
                response = client.post(path, body, content_type=content_type)
            else:
                response = client.post(path, body)
            answers.append((method, path[:90], response.status_code))
    return answers


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.name)
@pytest.mark.parametrize("role", ["moderator", "reporter", "anonymous"])
def test_no_garbage_id_gets_a_server_error(request, route, role, reporter, ids):
    _with_garbage_reports(reporter, ids)
    client = Client(raise_request_exception=False)
    if role != "anonymous":
        client.force_login(request.getfixturevalue(role))
    answers = _walk(client, route, ids)
    errors = [a for a in answers if a[2] >= 500]
    assert not errors, errors
    if route.name in MODERATORS_ONLY and role != "moderator":
        # and nobody else learns anything from them: refused before any id is read (a NUL in
        # the URL is refused before any view)
        refused = {code for _, path, code in answers if "%00" not in path}
        assert refused <= {401, 403, 405}


def test_a_world_report_naming_its_world_by_slug_shows_in_the_queue_and_is_closed_with_it(
    mod_client, api_as, moderator, reporter, outsider, world
):
    by_slug = Report.objects.create(
        reporter=reporter, target_type="world", target_id=world.slug, reason="spam"
    )
    by_pk = Report.objects.create(
        reporter=outsider, target_type="world", target_id=str(world.pk), reason="hate"
    )
    page = mod_client.get("/moderation/")
    queue = api_as(moderator).get("/api/moderation/queue/").json()
    slug_item = next(item for item in queue if item["target_id"] == world.slug)
    body = {"kind": "unlist", "target_type": "world", "target_id": world.slug, "reason": "spam"}
    acted = api_as(moderator).post("/api/moderation/actions/", body, format="json")
    by_slug.refresh_from_db()
    by_pk.refresh_from_db()
    world.refresh_from_db()
    assert page.status_code == 200 and "Snowy Pines" in page.content.decode()
    assert (slug_item["world"], slug_item["user"]) == (world.slug, "creator")
    assert acted.status_code == 201 and world.status == WorldStatus.UNLISTED
    # one action on the world closes its reports under either key: none is left in the queue
    assert by_slug.status == by_pk.status == ReportStatus.RESOLVED
    assert api_as(moderator).get("/api/moderation/queue/").json() == []
