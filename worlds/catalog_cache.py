"""What the public catalog pages may cache, and when that goes stale.

Any saved or deleted world bumps one version number in the shared cache; cached fragments key
on it, so a publish, edit or removal shows at once everywhere. Counters (plays, likes, trending)
change through `update()` without a bump and may lag by the cache's timeout.
"""

import time

from django.conf import settings
from django.core.cache import cache

VERSION_KEY = "catalog:version"


def catalog_version() -> int:
    return cache.get_or_set(VERSION_KEY, time.time_ns, timeout=None)


def catalog_changed(**_signal_kwargs) -> None:
    cache.set(VERSION_KEY, time.time_ns(), timeout=None)


def cached_fragment(name: str, render) -> str:
    """`render()` once per catalog version and HOME_CACHE_SECONDS; 0 turns caching off."""
    timeout = settings.HOME_CACHE_SECONDS
    if timeout <= 0:
        return render()
    key = f"catalog:{name}:{catalog_version()}"
    html = cache.get(key)
    if html is None:
        html = render()
        cache.set(key, html, timeout)  # a SafeString: it pickles as one and comes back as one
    return html
