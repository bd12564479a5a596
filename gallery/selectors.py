"""Account reads: public profiles."""

from django.db.models import Count, Q, Sum

from gallery.models import User
from worlds.models import WorldStatus


def user_get_profile(*, username: str) -> User:
    """An active account by username, with its published totals; raises User.DoesNotExist."""
    published = Q(worlds__status=WorldStatus.PUBLISHED)
    return User.objects.annotate(
        world_total=Count("worlds", filter=published),
        play_total=Sum("worlds__play_count", filter=published, default=0),
        like_total=Sum("worlds__like_count", filter=published, default=0),
    ).get(username=username, is_active=True)
