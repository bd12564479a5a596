from django.apps import AppConfig


class WorldsConfig(AppConfig):
    name = "worlds"
    verbose_name = "Worlds"
