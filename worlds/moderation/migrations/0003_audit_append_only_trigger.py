"""The audit log is append-only in the database too, not only through the app's models.

PostgreSQL refuses any UPDATE or DELETE of an audit row, whoever sends it (a raw query, a bulk
`QuerySet.update()`, a shell). The one change allowed is the SET NULL that deleting the actor's
account cascades into `actor_id`; `actor_name` keeps who it was. SQLite (the embedded default)
relies on the model's own refusals.
"""

from django.db import migrations

CREATE = """
CREATE FUNCTION moderation_audit_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.actor_id IS NULL AND OLD.actor_id IS NOT NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only' USING ERRCODE = 'insufficient_privilege';
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER moderation_audit_append_only
    BEFORE UPDATE OR DELETE ON moderation_auditentry
    FOR EACH ROW EXECUTE FUNCTION moderation_audit_append_only();
"""

DROP = """
DROP TRIGGER IF EXISTS moderation_audit_append_only ON moderation_auditentry;
DROP FUNCTION IF EXISTS moderation_audit_append_only();
"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("moderation", "0002_moderators_group")]
    operations = [migrations.RunPython(create, drop)]
