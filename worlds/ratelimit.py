"""How often someone did something lately: fixed-window counters in the shared cache, so every
web process counts together. Services call `hit`; the API answers RateLimited with a 429 and
pages with the error page (gallery.middleware)."""

from django.core.cache import cache


class RateLimited(Exception):
    """Too many in the window; the message is what the person sees."""


def hit(key: str, *, limit: int, window_s: int, message: str) -> None:
    """Count one more under `key`; RateLimited when that makes more than `limit` in the
    window that began with the first."""
    if count(key, window_s) > limit:
        raise RateLimited(message)


def count(key: str, window_s: int) -> int:
    """One more under `key`: -> how many in the window so far, this one included."""
    key = f"ratelimit:{key}"
    if cache.add(key, 1, timeout=window_s):
        return 1  # the window's first
    try:
        return cache.incr(key)
    except ValueError:  # the window expired between add and incr
        cache.set(key, 1, timeout=window_s)
        return 1


def seen(key: str) -> int:
    """How many are counted under `key` in its window now (none counted)."""
    return int(cache.get(f"ratelimit:{key}") or 0)


def forget(key: str) -> None:
    cache.delete(f"ratelimit:{key}")
