from django.apps import AppConfig


class ModerationConfig(AppConfig):
    name = "worlds.moderation"
    label = "moderation"
    verbose_name = "Moderation"
