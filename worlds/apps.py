from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class WorldsConfig(AppConfig):
    name = "worlds"
    verbose_name = "Worlds"

    def ready(self) -> None:
        from worlds.catalog_cache import catalog_changed
        from worlds.models import World

        post_save.connect(catalog_changed, sender=World, dispatch_uid="catalog-save")
        post_delete.connect(catalog_changed, sender=World, dispatch_uid="catalog-delete")
