from django.contrib.auth.models import AbstractUser
from django.db import models


class User(AbstractUser):
    """A Parallax account. Profiles are public; moderation state lives in worlds.moderation."""

    display_name = models.CharField(max_length=60, blank=True)
    bio = models.TextField(max_length=1000, blank=True)

    @property
    def public_name(self) -> str:
        return self.display_name or self.username
