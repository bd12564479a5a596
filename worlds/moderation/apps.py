from django.apps import AppConfig


class ModerationConfig(AppConfig):
    name = "worlds.moderation"
    label = "moderation"
    verbose_name = "Moderation"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from worlds.moderation.models import ModerationAction, Suspension
        from worlds.moderation.selectors import notices_changed

        def suspension_saved(instance: Suspension, **_kwargs) -> None:
            notices_changed(user_id=instance.user_id)

        def action_saved(instance: ModerationAction, **_kwargs) -> None:
            notices_changed(user_id=instance.target_user_id)

        for name, signal in (("save", post_save), ("delete", post_delete)):
            # weak=False: these closures live only as long as the connection holds them
            signal.connect(
                suspension_saved, sender=Suspension, weak=False, dispatch_uid=f"notices-s-{name}"
            )
            signal.connect(
                action_saved, sender=ModerationAction, weak=False, dispatch_uid=f"notices-a-{name}"
            )
