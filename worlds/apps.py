from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class WorldsConfig(AppConfig):
    name = "worlds"
    verbose_name = "Worlds"

    def ready(self) -> None:
        from worlds.catalog_cache import catalog_changed
        from worlds.models import Like, World
        from worlds.selectors import likes_changed

        post_save.connect(catalog_changed, sender=World, dispatch_uid="catalog-save")
        post_delete.connect(catalog_changed, sender=World, dispatch_uid="catalog-delete")
        post_save.connect(likes_changed, sender=Like, dispatch_uid="liked-save")
        post_delete.connect(likes_changed, sender=Like, dispatch_uid="liked-delete")
