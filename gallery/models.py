from django.contrib.auth.models import AbstractUser
from django.db import models

from gallery.lookalike import skeleton


class User(AbstractUser):
    """A Parallax account. Profiles are public; moderation state lives in worlds.moderation."""

    display_name = models.CharField(max_length=60, blank=True)
    bio = models.TextField(max_length=1000, blank=True)
    # The username as it reads (lookalike.skeleton): "οwner" and "0wner" are "owner".
    username_skeleton = models.CharField(max_length=150, blank=True, editable=False, db_index=True)

    def save(self, *args, **kwargs) -> None:
        self.username_skeleton = skeleton(self.username)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "username" in update_fields:
            kwargs["update_fields"] = {*update_fields, "username_skeleton"}
        super().save(*args, **kwargs)

    @property
    def public_name(self) -> str:
        return self.display_name or self.username
