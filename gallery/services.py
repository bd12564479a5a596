"""Account writes: sign-up and profile edits, screened by moderation like any public text."""

from django.core.exceptions import ValidationError
from django.db import transaction

from gallery.models import User


def _screen(fields: dict[str, str]) -> None:
    from worlds.moderation.screening import screen_text

    for name, text in fields.items():
        if not (text or "").strip():
            continue
        result = screen_text(text, field=name)
        # A public name is shown everywhere at once: hold is as good as block here.
        if result.verdict in ("block", "hold"):
            raise ValidationError({name: [result.message]})


def user_sign_up(*, username: str, password: str, email: str = "", display_name: str = "") -> User:
    _screen({"username": username, "display_name": display_name})
    with transaction.atomic():
        return User.objects.create_user(
            username=username, password=password, email=email, display_name=display_name.strip()
        )


def user_update_profile(*, user: User, display_name: str, bio: str) -> User:
    _screen({"display_name": display_name, "bio": bio})
    user.display_name = display_name.strip()
    user.bio = bio.strip()
    user.full_clean(exclude=["password"])
    user.save(update_fields=["display_name", "bio"])
    return user
