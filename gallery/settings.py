"""Parallax settings: everything that differs between machines comes from the environment.

Unset DATABASE_URL / REDIS_URL / S3_BUCKET give the embedded default: SQLite under var/,
an in-memory channel layer, a local-memory cache, eager Celery and media files under var/media.
"""

from pathlib import Path

import environ

from gallery.env import envbool, envfloat, envint, envlist, envstr

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(envstr("PARALLAX_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = envbool("DEBUG", False)
SECRET_KEY = envstr("SECRET_KEY", "")
if not SECRET_KEY:
    if envbool("PARALLAX_REQUIRE_SECRET_KEY", False):
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("SECRET_KEY must be set in production")
    # Development only: a stable per-checkout key so sessions survive restarts.
    _key_file = VAR_DIR / "secret_key"
    if not _key_file.exists():
        from django.core.management.utils import get_random_secret_key

        _key_file.write_text(get_random_secret_key())
    SECRET_KEY = _key_file.read_text().strip()

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from our static files: no CDN needed
    "channels",
    "storages",
    "gallery",
    "worlds",
    "worlds.moderation",
    "sessions.apps.PlayConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "gallery.middleware.RejectNulMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "gallery.middleware.CachedAuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "gallery.middleware.RateLimitedPageMiddleware",
]

ROOT_URLCONF = "gallery.urls"
ASGI_APPLICATION = "gallery.asgi.application"
WSGI_APPLICATION = "gallery.wsgi.application"
AUTH_USER_MODEL = "gallery.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "gallery.context_processors.site",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
_env = environ.Env()
DATABASES = {
    "default": _env.db_url_config(
        envstr("DATABASE_URL", f"sqlite:///{VAR_DIR / 'parallax.sqlite3'}")
    )
}
DATABASES["default"]["CONN_MAX_AGE"] = envint("DB_CONN_MAX_AGE", 0)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default serves web and worker from one process: WAL keeps readers unblocked.
    DATABASES["default"]["OPTIONS"] = {"init_command": "PRAGMA journal_mode=WAL;", "timeout": 20}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USING_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")
# A psycopg pool per process reuses connections instead of opening one per request (0: off).
DB_POOL_MAX_SIZE = envint("DB_POOL_MAX_SIZE", 0)
if USING_POSTGRES and DB_POOL_MAX_SIZE > 0:
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django refuses persistent connections with a pool
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": DB_POOL_MAX_SIZE,
        "timeout": 10,
    }

# --- Redis: channel layer, cache, Celery ----------------------------------------------------
REDIS_URL = envstr("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYER_BACKEND = envstr(
        "CHANNEL_LAYER_BACKEND", "sessions.channel_layer.FrameCappedPubSubChannelLayer"
    )
    CHANNEL_LAYERS = {
        "default": {"BACKEND": CHANNEL_LAYER_BACKEND, "CONFIG": {"hosts": [REDIS_URL]}}
    }
    if CHANNEL_LAYER_BACKEND == "sessions.channel_layer.FrameCappedPubSubChannelLayer":
        # frames a socket's channel holds unread before the oldest is dropped (the rest: all)
        CHANNEL_LAYERS["default"]["CONFIG"]["frame_backlog"] = envint("CHANNEL_FRAME_BACKLOG", 24)
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": envstr("CACHE_KEY_PREFIX", "px"),
        }
    }
    # A signed-in request reads its session from the shared cache, not the database (written
    # to both). Only with Redis: per-process memory caches would disagree after a logout.
    SESSION_ENGINE = envstr("SESSION_ENGINE", "django.contrib.sessions.backends.cached_db")
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_BEAT_SCHEDULE = {
    "recompute-trending": {
        "task": "worlds.tasks.recompute_trending",
        "schedule": envfloat("TRENDING_INTERVAL_S", 300.0),
    },
    # Live play's safety net: sessions whose idle/grace timers died with their web process.
    "reap-play-sessions": {
        "task": "sessions.tasks.reap_sessions",
        "schedule": envfloat("PLAY_REAP_INTERVAL_S", 30.0),
    },
    "forget-stale-live-worlds": {
        "task": "sessions.tasks.forget_stale_live_worlds",
        "schedule": 24 * 3600.0,
    },
}

# --- Storage: S3 when configured, local files otherwise --------------------------------------
S3_BUCKET = envstr("S3_BUCKET", "")
MEDIA_URL = "/media/"
MEDIA_ROOT = Path(envstr("MEDIA_ROOT", str(VAR_DIR / "media")))
STATIC_URL = "/static/"
STATIC_ROOT = Path(envstr("STATIC_ROOT", str(VAR_DIR / "static")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every request without it
STATICFILES_DIRS = [BASE_DIR / "static"]
# Without a collected manifest (development, tests) WhiteNoise serves straight from the finders.
WHITENOISE_USE_FINDERS = envbool("WHITENOISE_USE_FINDERS", True)
if S3_BUCKET:
    _default_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": S3_BUCKET,
            "endpoint_url": envstr("S3_ENDPOINT_URL", "") or None,
            "access_key": envstr("S3_ACCESS_KEY", "") or None,
            "secret_key": envstr("S3_SECRET_KEY", "") or None,
            "region_name": envstr("S3_REGION", "us-east-1"),
            "signature_version": "s3v4",
            "addressing_style": "path",
            "file_overwrite": False,
            "default_acl": None,
            "querystring_auth": True,
        },
    }
else:
    _default_storage = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
STORAGES = {
    "default": _default_storage,
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}
    if envbool("STATIC_MANIFEST", False)
    else {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# --- REST framework -------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 24,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "gallery.api_errors.json_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Parallax API",
    "DESCRIPTION": "Gallery of real-time, playable AI worlds.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several components have a "status": name the session's set once for all of them.
    "ENUM_NAME_OVERRIDES": {"SessionStatusEnum": "sessions.models.SessionStatus"},
}

# --- Uploads --------------------------------------------------------------------------------
DATA_UPLOAD_MAX_MEMORY_SIZE = 6 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 6 * 1024 * 1024
COVER_MAX_BYTES = 5 * 1024 * 1024
COVER_MAX_SIDE = 4096
# Render a cover with the world model for worlds published without one. Off by default in eager
# mode (the tests); `make run` turns it on, and there it renders on a thread beside the request;
# `manage.py render_covers` backfills.
COVER_RENDER_AUTO = envbool("COVER_RENDER_AUTO", not CELERY_TASK_ALWAYS_EAGER)

# Seconds the home page's rows stay cached (any world saved invalidates them; 0: off).
HOME_CACHE_SECONDS = envint("HOME_CACHE_SECONDS", 10)
# Seconds a signed-in account's row and permissions stay in the shared cache (gallery/
# viewer_cache.py: saves and permission changes drop them at once; 0: read them per request).
VIEWER_CACHE_SECONDS = envint("VIEWER_CACHE_SECONDS", 60)
# Leak hunting (bench/soak.py --tracemalloc), off unless set: seconds between a worker's reports
# of its allocation sites that grew most.
TRACEMALLOC_EVERY_S = envfloat("PARALLAX_TRACEMALLOC_EVERY_S", 0.0)

# --- Live play ------------------------------------------------------------------------------
# Embedded default: the web process runs one in-process inference worker.
INFERENCE_IN_PROCESS = envbool("INFERENCE_IN_PROCESS", not REDIS_URL)
INFERENCE_DEVICE = envstr("INFERENCE_DEVICE", "cpu")
INFERENCE_CAPACITY = envint("INFERENCE_CAPACITY", 8)
INFERENCE_FPS = envfloat("INFERENCE_FPS", 24.0)
# torch threads of a worker process (frames, terrain, screening): 1 measured faster on 2 cores
INFERENCE_THREADS = envint("INFERENCE_THREADS", 1)
SESSION_MAX_SECONDS = envint("SESSION_MAX_SECONDS", 30 * 60)
SESSION_IDLE_SECONDS = envint("SESSION_IDLE_SECONDS", 5 * 60)
SESSION_RECONNECT_GRACE_SECONDS = envint("SESSION_RECONNECT_GRACE_SECONDS", 30)
SESSION_MAX_PER_USER = envint("SESSION_MAX_PER_USER", 2)
SESSION_MAX_ANON_PER_BROWSER = envint("SESSION_MAX_ANON_PER_BROWSER", 1)
SESSION_MAX_ANON_PER_IP = envint("SESSION_MAX_ANON_PER_IP", 3)
# Players one shared session seats at most, whatever a world's creator allows.
SESSION_MAX_PLAYERS = envint("SESSION_MAX_PLAYERS", 8)
# A shared story's vote closes this long after its first vote (or once everyone voted).
STORY_VOTE_SECONDS = envfloat("STORY_VOTE_SECONDS", 15.0)
# A Live world's state is kept this long after its last session ended (then it starts fresh).
LIVE_WORLD_KEEP_DAYS = envint("LIVE_WORLD_KEEP_DAYS", 30)
# Every session is recorded (its input log, the language model's text, snapshots) into the
# media store; a player's recordings and videos may use this many bytes before exports stop.
RECORD_SESSIONS = envbool("RECORD_SESSIONS", True)
RECORDING_STORAGE_PER_USER = envint("RECORDING_STORAGE_PER_USER", 500 * 1024 * 1024)
# Exports a player may start per hour.
RECORDING_EXPORTS_PER_HOUR = envint("RECORDING_EXPORTS_PER_HOUR", 20)
# Proxies in front of the ASGI server that append to X-Forwarded-For (gallery/client_ip.py).
TRUSTED_PROXY_COUNT = envint("TRUSTED_PROXY_COUNT", 0)

# --- Moderation -----------------------------------------------------------------------------
MODERATION_REPORTS_PER_HOUR = envint("MODERATION_REPORTS_PER_HOUR", 20)

# --- Rate limits (worlds/ratelimit.py): each world made is screened and may queue a cover render
WORLDS_CREATED_PER_HOUR = envint("WORLDS_CREATED_PER_HOUR", 30)  # per user, remixes included
LIKES_PER_HOUR = envint("LIKES_PER_HOUR", 300)  # per user
SIGN_UPS_PER_HOUR = envint("SIGN_UPS_PER_HOUR", 10)  # per client address
LOGINS_PER_15_MIN = envint("LOGINS_PER_15_MIN", 10)  # failed, per client address and username

# --- Security -------------------------------------------------------------------------------
# HTTPS=true behind a TLS-terminating proxy turns on every transport-security setting.
HTTPS = envbool("HTTPS", False)
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", HTTPS)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", HTTPS)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", HTTPS)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 3600 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
