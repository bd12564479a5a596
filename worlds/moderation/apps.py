from django.apps import AppConfig


class ModerationConfig(AppConfig):
    name = "worlds.moderation"
    label = "moderation"
    verbose_name = "Moderation"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from worlds.moderation.models import ModerationAction, Suspension
        from worlds.moderation.selectors import action_changed, suspension_changed

        for name, signal in (("save", post_save), ("delete", post_delete)):
            signal.connect(suspension_changed, sender=Suspension, dispatch_uid=f"notices-s-{name}")
            signal.connect(
                action_changed, sender=ModerationAction, dispatch_uid=f"notices-a-{name}"
            )
