"""Template hooks other apps' pages use: the moderator nav link, the suspension banner, and the
removal notice on a world's page."""

from django import template

from inference.world.spec import avatar_hex
from worlds.moderation import policy, selectors

register = template.Library()


@register.filter
def is_moderator(user) -> bool:
    return policy.is_moderator(user)


@register.filter
def avatar_color(slot) -> str:
    """The CSS colour of a seat's avatar (the moderators' live page lists players by it)."""
    return avatar_hex(int(slot))


@register.inclusion_tag("moderation/_suspension_banner.html", takes_context=True)
def suspension_banner(context) -> dict:
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return selectors.viewer_notices(user=user)


@register.inclusion_tag("moderation/_removal_notice.html")
def removal_notice(world) -> dict:
    return {"world": world, "removal": selectors.world_removal(world=world)}
