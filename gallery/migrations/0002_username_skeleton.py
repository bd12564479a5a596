from django.db import migrations, models


def fill(apps, schema_editor):
    from gallery.lookalike import skeleton

    User = apps.get_model("gallery", "User")
    for user in User.objects.only("pk", "username").iterator():
        User.objects.filter(pk=user.pk).update(username_skeleton=skeleton(user.username))


class Migration(migrations.Migration):
    dependencies = [
        ("gallery", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="user",
            name="username_skeleton",
            field=models.CharField(blank=True, db_index=True, editable=False, max_length=150),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
