"""A signed-in person's account row and permissions, read from the shared cache.

Every signed-in request needs the account (Django reads it by the session's user id) and most
pages ask whether it is a moderator (two permission queries: the user's own and its groups').
Both are kept together in the shared cache, one entry per account (without its password
hash), so a signed-in page reads them in one Redis round trip instead of three queries. Only
the account's own session may use the entry: the session's auth hash must match the kept one,
as Django checks it, and anything unusual (no entry, a hash signed with an older secret, a
backend not configured) goes Django's own way, `django.contrib.auth.get_user`.

Stale entries: saving or deleting the account drops its entry (now and again once the
transaction commits); a change of any group or permission assignment moves one version number
that every entry carries, so each reads its row and permissions again. A write that sends no
signal (`QuerySet.update` on users, raw SQL) shows within VIEWER_CACHE_SECONDS.
"""

import time

from django.conf import settings
from django.contrib import auth
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest
from django.utils.crypto import constant_time_compare

PERMISSIONS_VERSION_KEY = "viewer:permissions-version"


def _entry_key(user_id) -> str:
    return f"viewer:{user_id}"


def _permissions_version(kept) -> int:
    if kept is None:
        kept = time.time_ns()
        cache.add(PERMISSIONS_VERSION_KEY, kept, timeout=None)
    return kept


def _account(user_id, backend_path: str) -> tuple[str, AbstractBaseUser] | None:
    """(session auth hash, the account as `backend_path` reads it, with its permissions
    already on it: the model backend keeps them on the instance, so `has_perm` asks no
    query): kept, or read and kept. The password hash is never kept: the entry holds the
    session hash Django derives from it, and the account's password field is left unloaded
    (read from the database if something asks for it; a save writes the other fields)."""
    key = _entry_key(user_id)
    kept = cache.get_many([PERMISSIONS_VERSION_KEY, key])
    version = _permissions_version(kept.get(PERMISSIONS_VERSION_KEY))
    entry = kept.get(key)
    if entry is not None and entry[:2] == (version, backend_path):
        return entry[2], entry[3]
    user = auth.load_backend(backend_path).get_user(user_id)
    if user is None:
        return None
    session_hash = user.get_session_auth_hash()
    user.get_all_permissions()  # filled on the instance before it is pickled
    user.__dict__.pop("password", None)  # a deferred field from here on
    cache.set(key, (version, backend_path, session_hash, user), settings.VIEWER_CACHE_SECONDS)
    return session_hash, user


def get_user(request: HttpRequest) -> AbstractBaseUser | AnonymousUser:
    """The signed-in account of this request's session, or AnonymousUser."""
    if settings.VIEWER_CACHE_SECONDS <= 0:
        return auth.get_user(request)
    session = request.session
    try:
        user_id = auth.get_user_model()._meta.pk.to_python(session[SESSION_KEY])
        backend_path = session[BACKEND_SESSION_KEY]
        session_hash = session[HASH_SESSION_KEY]
    except (KeyError, ValidationError):
        return auth.get_user(request)
    if backend_path in settings.AUTHENTICATION_BACKENDS:
        account = _account(user_id, backend_path)
        if account is not None and constant_time_compare(session_hash, account[0]):
            return account[1]
    return auth.get_user(request)  # flushes a session whose hash no longer verifies


def account_changed(instance, **_signal_kwargs) -> None:
    """An account was saved or deleted: its entry goes, now and once the write commits (a
    request between the two may have kept the old row)."""
    key = _entry_key(instance.pk)
    cache.delete(key)
    transaction.on_commit(lambda: cache.delete(key))


def permissions_changed(**_signal_kwargs) -> None:
    """A group or permission assignment changed: every entry reads its permissions again."""

    def bump() -> None:
        cache.set(PERMISSIONS_VERSION_KEY, time.time_ns(), timeout=None)

    bump()
    transaction.on_commit(bump)
