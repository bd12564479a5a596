"""Account writes: sign-up and profile edits, screened by moderation like any public text."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from gallery.lookalike import skeleton
from gallery.models import User
from worlds import ratelimit
from worlds.catalog_cache import catalog_changed
from worlds.moderation import policy


def _screen(fields: dict[str, str]) -> None:
    for name, text in fields.items():
        refusal = policy.public_text_refusal(text, field=name)
        if refusal is not None:
            raise ValidationError({name: [refusal]})


def _refuse_lookalike(field: str, name: str, user: User | None = None) -> None:
    """A username, or a display name, that reads as another account's username ("οwner" with a
    Greek omicron beside "owner") would let its holder pass for them."""
    if not name.strip():
        return
    others = User.objects.filter(username_skeleton=skeleton(name.strip()))
    if user is not None:
        others = others.exclude(pk=user.pk)
    if others.exists():
        message = "That name looks like another member's username. Please choose another."
        raise ValidationError({field: [message]})


def user_sign_up(
    *,
    username: str,
    password: str,
    email: str = "",
    display_name: str = "",
    client_ip: str | None = None,
) -> User:
    if client_ip:
        limit = settings.SIGN_UPS_PER_HOUR
        message = f"{limit} accounts were made from here in the last hour. Please try later."
        ratelimit.hit(f"accounts:signup:{client_ip}", limit=limit, window_s=3600, message=message)
    _screen({"username": username, "display_name": display_name})
    with transaction.atomic():
        _refuse_lookalike("username", username)
        _refuse_lookalike("display_name", display_name)
        return User.objects.create_user(
            username=username, password=password, email=email, display_name=display_name.strip()
        )


def user_update_profile(*, user: User, display_name: str, bio: str) -> User:
    policy.ensure_not_suspended(user)  # a profile is public text, as a world is
    _screen({"display_name": display_name, "bio": bio})
    _refuse_lookalike("display_name", display_name, user=user)
    user.display_name = display_name.strip()
    user.bio = bio.strip()
    user.full_clean(exclude=["password"])
    user.save(update_fields=["display_name", "bio"])
    # their profile's head and their cards show it: the shared renderings go, now and once the
    # write commits (a page between the two may have kept the old ones)
    catalog_changed()
    transaction.on_commit(catalog_changed)
    return user
