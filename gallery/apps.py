from django.apps import AppConfig
from django.db.models.signals import m2m_changed, post_delete, post_save


class GalleryConfig(AppConfig):
    name = "gallery"
    verbose_name = "Parallax gallery"

    def ready(self) -> None:
        from django.contrib.auth.models import Group, Permission

        from gallery.models import User
        from gallery.viewer_cache import account_changed, permissions_changed

        for name, signal in (("save", post_save), ("delete", post_delete)):
            signal.connect(account_changed, sender=User, dispatch_uid=f"viewer-{name}")
            signal.connect(permissions_changed, sender=Permission, dispatch_uid=f"perm-{name}")
        post_delete.connect(permissions_changed, sender=Group, dispatch_uid="perm-group-delete")
        for through in (
            User.groups.through,
            User.user_permissions.through,
            Group.permissions.through,
        ):
            m2m_changed.connect(permissions_changed, sender=through, dispatch_uid=f"perm-{through}")
