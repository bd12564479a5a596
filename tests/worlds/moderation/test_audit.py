"""The audit log: one entry per action, automatic or manual; append-only; filterable."""

import pytest
from django.core.exceptions import ValidationError

from tests.worlds.factories import make_world
from tests.worlds.moderation.factories import make_session
from worlds.moderation import services
from worlds.moderation.models import AuditEntry


def _target(kind, world, creator):
    if kind in ("warn", "suspend", "unsuspend"):
        return "user", creator.username
    return "world", world.slug


SEQUENCE = [
    ("dismiss", {"open_reports": 0}, {"open_reports": 0}),
    ("unlist", {"status": "published"}, {"status": "unlisted"}),
    ("restore", {"status": "unlisted"}, {"status": "published"}),
    ("remove", {"status": "published"}, {"status": "removed"}),
    ("restore", {"status": "removed"}, {"status": "published"}),
    ("warn", {"warnings": 0}, {"warnings": 1}),
    ("suspend", {"suspended_until": None}, {"suspended_until": "permanent"}),
    ("unsuspend", {"suspended_until": "permanent"}, {"suspended_until": None}),
]


def test_every_action_leaves_exactly_one_entry_with_before_and_after(world, creator, moderator):
    for n, (kind, before, after) in enumerate(SEQUENCE, start=1):
        target_type, target_id = _target(kind, world, creator)
        services.action_take(
            moderator=moderator, kind=kind, target_type=target_type, target_id=target_id,
            reason=f"reason {n}",
        )  # fmt: skip
        assert AuditEntry.objects.count() == n, kind
        entry = AuditEntry.objects.order_by("-id").first()
        assert (entry.action, entry.actor, entry.actor_name) == (kind, moderator, "mod")
        assert entry.reason == f"reason {n}"
        assert entry.target_type == target_type
        assert entry.before == before, kind
        assert entry.after == after, kind


def test_ending_a_session_leaves_one_entry(world, creator, moderator):
    session = make_session(world=world, player=creator)
    services.action_take(
        moderator=moderator, kind="end_session", target_type="session", target_id=str(session.pk),
        reason="abuse",
    )  # fmt: skip
    entry = AuditEntry.objects.get()
    assert (entry.target_id, entry.before, entry.after) == (
        str(session.pk),
        {"status": "live"},
        {"status": "ended"},
    )


def test_a_refused_action_leaves_no_entry(world, moderator):
    with pytest.raises(ValidationError):
        services.action_take(
            moderator=moderator, kind="unsuspend", target_type="world", target_id=world.slug,
            reason="not suspended",
        )  # fmt: skip
    assert not AuditEntry.objects.exists()


def test_a_screening_hold_is_audited_as_an_automatic_entry_and_queued(creator):
    from worlds.moderation import selectors
    from worlds.services import world_publish

    world = make_world(creator, status="draft", description="a bloodbath on the battlefield")
    world = world_publish(world=world, by=creator)
    assert world.status == "in_review"
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor, entry.actor_name) == ("hold", None, "screening")
    assert entry.after["category"] == "violence"
    [item] = selectors.queue_items()
    assert item.world == world
    assert item.reports[0].reporter is None


def test_the_audit_log_cannot_be_changed_or_deleted_through_the_app(world, moderator):
    services.action_take(
        moderator=moderator, kind="unlist", target_type="world", target_id=world.slug, reason="x"
    )
    entry = AuditEntry.objects.get()
    entry.reason = "rewritten"
    with pytest.raises(PermissionError):
        entry.save()
    with pytest.raises(PermissionError):
        entry.delete()
    with pytest.raises(PermissionError):
        AuditEntry.objects.filter(pk=entry.pk).update(reason="rewritten")
    with pytest.raises(PermissionError):
        AuditEntry.objects.all().delete()
    assert AuditEntry.objects.get().reason == "x"


def test_the_audit_page_filters_by_actor_action_and_target(mod_client, world, creator, moderator):
    services.action_take(
        moderator=moderator, kind="unlist", target_type="world", target_id=world.slug,
        reason="first reason",
    )  # fmt: skip
    services.action_take(
        moderator=moderator, kind="warn", target_type="user", target_id=creator.username,
        reason="second reason",
    )  # fmt: skip
    html = mod_client.get("/moderation/audit/?action=warn").content.decode()
    assert "second reason" in html and "first reason" not in html
    html = mod_client.get(f"/moderation/audit/?target_type=world&target_id={world.pk}").content
    assert b"first reason" in html and b"second reason" not in html
    html = mod_client.get("/moderation/audit/?actor=nobody").content
    assert b"first reason" not in html


def test_the_audit_api_filters_and_pages(api_as, world, creator, moderator):
    for n in range(3):
        services.action_take(
            moderator=moderator, kind="warn", target_type="user", target_id=creator.username,
            reason=f"warning {n}",
        )  # fmt: skip
    body = api_as(moderator).get("/api/moderation/audit/?action=warn&actor=mod").json()
    assert body["count"] == 3
    assert [e["reason"] for e in body["results"]] == ["warning 2", "warning 1", "warning 0"]


def test_the_trail_survives_the_deletion_of_the_moderators_account(world, moderator):
    services.action_take(
        moderator=moderator, kind="unlist", target_type="world", target_id=world.slug, reason="x"
    )
    moderator.delete()
    entry = AuditEntry.objects.get()
    assert (entry.actor, entry.actor_name, entry.action) == (None, "mod", "unlist")


@pytest.mark.skipif(
    not __import__("django.conf").conf.settings.USING_POSTGRES,
    reason="the database trigger is PostgreSQL's (CI runs it)",
)
def test_the_database_itself_refuses_to_change_or_delete_an_audit_entry(world, moderator):
    from django.db import DatabaseError, connection, transaction

    services.action_take(
        moderator=moderator, kind="unlist", target_type="world", target_id=world.slug,
        reason="spam",
    )  # fmt: skip
    entry = AuditEntry.objects.get()
    # The models already refuse; these go round them, as a shell or another client could.
    for sql in (
        "UPDATE moderation_auditentry SET reason = 'nothing happened'",
        "DELETE FROM moderation_auditentry",
    ):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            connection.cursor().execute(sql)
    assert AuditEntry.objects.get().reason == "spam"

    moderator.delete()  # an account may go; its trail stays, with the name it had
    entry.refresh_from_db()
    assert (entry.actor, entry.actor_name, entry.reason) == (None, "mod", "spam")
