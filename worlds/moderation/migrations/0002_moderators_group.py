"""The "Moderators" group, holding moderation.moderate: make someone a moderator by adding them."""

from django.db import migrations


def create_group(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    # Permissions are normally created after migrate; the group needs this one now.
    content_type, _ = ContentType.objects.get_or_create(app_label="moderation", model="report")
    permission, _ = Permission.objects.get_or_create(
        content_type=content_type,
        codename="moderate",
        defaults={"name": "Can moderate reports, worlds, users and live sessions"},
    )
    group, _ = Group.objects.get_or_create(name="Moderators")
    group.permissions.add(permission)


def remove_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="Moderators").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("moderation", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, remove_group)]
