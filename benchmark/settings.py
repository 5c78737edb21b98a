"""Settings come from the environment (django-environ); no variables set gives a working
development set-up: SQLite with WAL in the project folder, in-process jobs, local media."""

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import environ
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from benchmark.cache_settings import cache_url_resolve

BASE_DIR = Path(__file__).resolve().parent.parent

# The development key: public (it is in the repository), so good for bin/run and tests only.
# With DEBUG off the app refuses to start on it, and `check --deploy` names it
# (benchmark/checks.py).
DEV_SECRET_KEY = "dev-insecure-benchwright-key-change-me-in-production-0123456789"

env = environ.Env(
    # On for the one-command development set-up (bin/run); `check --deploy` flags it.
    DEBUG=(bool, True),
    ALLOWED_HOSTS=(list, ["127.0.0.1", "localhost", "[::1]", "testserver"]),
    CSRF_TRUSTED_ORIGINS=(list, []),
    CELERY_BROKER_URL=(str, ""),
    # Django's cache (computed figures such as the agreement page's); unset: the Redis
    # broker's server with another database number, else each process's own memory
    # (benchmark/cache_settings.py).
    CACHE_URL=(str, ""),
    MEDIA_ROOT=(str, str(BASE_DIR / "media")),
    AWS_STORAGE_BUCKET_NAME=(str, ""),
    AWS_S3_ENDPOINT_URL=(str, ""),
    AWS_S3_REGION_NAME=(str, ""),
    AWS_ACCESS_KEY_ID=(str, ""),
    AWS_SECRET_ACCESS_KEY=(str, ""),
    AWS_LOCATION=(str, ""),
    SECURE_SSL_REDIRECT=(bool, False),
    MAX_UPLOAD_MB=(int, 200),
    MAX_IMAGE_PIXELS=(int, 40_000_000),
    MAX_AUDIO_MB=(int, 50),
    DERIVE_SECONDS=(float, 10.0),
    BENCHWRIGHT_MODEL_BASE_URL=(str, ""),
    BENCHWRIGHT_MODEL_NAME=(str, ""),
    BENCHWRIGHT_MODEL_API_KEY=(str, ""),
    BENCHWRIGHT_MODEL_TIMEOUT=(float, 120.0),
    BENCHWRIGHT_MODEL_MAX_RETRIES=(int, 3),
    BENCHWRIGHT_MODEL_CONCURRENCY=(int, 4),
    BENCHWRIGHT_MODEL_RPM=(int, 0),
    JUDGE_MAX_IMAGES=(int, 16),
    EVALUATION_CHUNK_ITEMS=(int, 50),
    JUDGMENT_UNDO_MINUTES=(int, 10),
    BENCHWRIGHT_IMAGE_GEN_BASE_URL=(str, ""),
    BENCHWRIGHT_IMAGE_GEN_MODEL=(str, ""),
    BENCHWRIGHT_IMAGE_GEN_API_KEY=(str, ""),
    BENCHWRIGHT_IMAGE_GEN_SIZE=(str, ""),
    BENCHWRIGHT_IMAGE_EDIT_BASE_URL=(str, ""),
    BENCHWRIGHT_IMAGE_EDIT_MODEL=(str, ""),
    BENCHWRIGHT_IMAGE_EDIT_API_KEY=(str, ""),
    BENCHWRIGHT_IMAGE_SEARCH_URL=(str, ""),
    BENCHWRIGHT_IMAGE_SEARCH_API_KEY=(str, ""),
    BENCHWRIGHT_IMAGE_SEARCH_PARAM=(str, "q"),
    BENCHWRIGHT_IMAGE_SEARCH_ALLOW_PRIVATE=(bool, False),
    BENCHWRIGHT_RENDER_TIMEOUT=(float, 120.0),
    BENCHWRIGHT_RENDER_WORKERS=(int, 0),
    MODEL_API_KEY_ENV_ALLOWLIST=(list, ["BENCHWRIGHT_MODEL_API_KEY"]),
    LOGIN_FAILURE_LIMIT=(int, 10),
    LOGIN_ADDRESS_FAILURE_LIMIT=(int, 50),
    LOGIN_COOLOFF_MINUTES=(int, 15),
    LOGIN_PROXY_COUNT=(int, 0),
    LOGIN_CONCURRENCY=(int, 1),
    SANDBOX_WALL_SECONDS=(float, 10.0),
    SANDBOX_CPU_SECONDS=(int, 5),
    SANDBOX_MEMORY_MB=(int, 512),
    SANDBOX_MAX_PROCESSES=(int, 8),
    SANDBOX_MAX_OUTPUT_KB=(int, 64),
    SANDBOX_MAX_IMAGE_MB=(int, 5),
    SANDBOX_MAX_IMAGES=(int, 8),
    SANDBOX_WORKDIR_MB=(int, 32),
)
env_file = BASE_DIR / ".env"
if env_file.exists():
    environ.Env.read_env(env_file)

DEBUG = env("DEBUG")
# Taken as written, not through env(): django-environ reads a value that begins with "$" as the
# name of another variable, and Django's get_random_secret_key() (README's recipe) begins one key
# in 50 with "$". A .env file's values are in os.environ by now (read_env above).
SECRET_KEY = os.environ.get("SECRET_KEY", DEV_SECRET_KEY)


def _secret_key_problem(key: str) -> str:
    """Why ``key`` is not a real secret key ("" when it is one): the rules of Django's own
    check (security.W009), plus the development key, which is long but public."""
    if key == DEV_SECRET_KEY:
        return "is the public development key"
    if len(key) < 50 or len(set(key)) < 5:
        return "is shorter than 50 characters or has fewer than 5 different ones"
    if key.startswith("django-insecure"):
        return "is a key Django generated for development (django-insecure-...)"
    return ""


if not DEBUG and _secret_key_problem(SECRET_KEY):
    raise ImproperlyConfigured(
        f"DEBUG is false but SECRET_KEY {_secret_key_problem(SECRET_KEY)}. Set SECRET_KEY in the "
        "environment (or .env) to a long random value of at least 50 characters, e.g. the "
        "output of: python -c 'from django.core.management.utils import "
        "get_random_secret_key as k; print(k())'"
    )

ALLOWED_HOSTS = env("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",
    "csp",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "benchmark",
    "annotation",
    "review",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before the session: a password check beyond the per-process limit is refused before any
    # work (benchmark/login_throttle.py, LOGIN_CONCURRENCY).
    "benchmark.login_throttle.LoginConcurrencyMiddleware",
    # Logs (rate-limited) requests that came through a proxy LOGIN_PROXY_COUNT does not count.
    "benchmark.login_throttle.ProxySettingCheckMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # What the visibility rules decided is remembered for one request (benchmark/visibility.py).
    "benchmark.visibility.DecisionsMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: turns a login attempt while locked out into its answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "benchmark.urls"

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
                # The banner for staff when LOGIN_PROXY_COUNT misses a proxy.
                "benchmark.login_throttle.proxy_warning",
            ],
        },
    },
]

# Forms render through Django's own widget templates (the default FORM_RENDERER); templates,
# partials included, are compiled once per process by the cached loader that
# django-template-partials puts around the filesystem and app loaders.

WSGI_APPLICATION = "benchmark.wsgi.application"

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'benchwright.sqlite3'}")
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        }
    )
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", 60)
    DATABASES["default"]["ENGINE"] = "django.db.backends.postgresql"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            # Hashed names; a file missing from the manifest gets its plain URL (and a log
            # line) instead of turning every page into a 500.
            else "benchmark.static_storage.ForgivingManifestStaticFilesStorage"
        )
    },
}
# WhiteNoise tells a hashed (cache-forever) file by the name Django's manifest storage gives it
# (``name.<12 hex>.ext``), instead of asking the storage for the URL of a guessed unhashed
# name for every collected file: for a file with two extensions (``swagger-ui.css.map``) the
# guess names no file, and each web process logged it as a missing manifest entry at start.
WHITENOISE_IMMUTABLE_FILE_TEST = r"\.[0-9a-f]{12}(\.[^./]+)?$"
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env("MEDIA_ROOT"))

# Object storage: with AWS_STORAGE_BUCKET_NAME set, images, derived crops, releases and the
# uploads a job reads live in that S3-compatible bucket (AWS S3, MinIO, Ceph, ...: set
# AWS_S3_ENDPOINT_URL for anything but AWS), under the AWS_LOCATION prefix, so any web or
# worker machine serves and reads any file. Files are only ever served through the app's own
# permission-checked views: no public or signed URLs, no ACLs. MEDIA_ROOT stays a local
# scratch folder (uploads being unpacked, a job's files while it runs). See benchmark/storage.py.
if env("AWS_STORAGE_BUCKET_NAME"):
    STORAGES["default"] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env("AWS_STORAGE_BUCKET_NAME"),
            "endpoint_url": env("AWS_S3_ENDPOINT_URL") or None,
            "region_name": env("AWS_S3_REGION_NAME") or None,
            # Empty: boto3 finds credentials itself (instance role, ~/.aws, ...).
            "access_key": env("AWS_ACCESS_KEY_ID") or None,
            "secret_key": env("AWS_SECRET_ACCESS_KEY") or None,
            "location": env("AWS_LOCATION"),
            "querystring_auth": False,
            "default_acl": None,
            "file_overwrite": True,  # names are content hashes or job/release folders
        },
    }

# Login throttling (django-axes) on every password check: the login page, the admin's and the
# API's basic auth, and on password links (benchmark/login_throttle.py says it all). A username
# is locked from one address: after LOGIN_FAILURE_LIMIT failures for it from there, logins to
# it from there are refused for LOGIN_COOLOFF_MINUTES after the last counted failure, with
# HTTP 429 and a message saying when to try again. Attempts while locked are not counted, so
# they do not push that time back. Other accounts from the same address and the same account
# from elsewhere are not held back. An address with LOGIN_ADDRESS_FAILURE_LIMIT failures within
# the cool-off, for any usernames, is slowed down: one wrong password then locks that account
# from it (right passwords still work). A successful login clears that account's failures from
# that address. `manage.py axes_reset_username NAME` (or the admin's "Access attempts") unlocks
# early.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_FAILURE_LIMIT = env("LOGIN_FAILURE_LIMIT")
LOGIN_ADDRESS_FAILURE_LIMIT = env("LOGIN_ADDRESS_FAILURE_LIMIT")
AXES_FAILURE_LIMIT = "benchmark.login_throttle.failure_limit"
AXES_COOLOFF_TIME = timedelta(minutes=env("LOGIN_COOLOFF_MINUTES"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "benchmark.login_throttle.lockout_response"
# Behind a reverse proxy REMOTE_ADDR is the proxy's, for everyone: set LOGIN_PROXY_COUNT to the
# number of trusted proxies in front of the app, so the client's address comes from their
# X-Forwarded-For (counted from the right, where a client cannot write). Requests carrying
# X-Forwarded-For while it is 0 are logged as a warning and staff see a banner.
LOGIN_PROXY_COUNT = env("LOGIN_PROXY_COUNT")
AXES_CLIENT_IP_CALLABLE = "benchmark.login_throttle.client_ip"
# Password checks (0.4 s of CPU each) running at once per web process; one beyond is answered
# 503 with Retry-After, so a burst of logins leaves threads and CPU for the judging pages.
LOGIN_CONCURRENCY = env("LOGIN_CONCURRENCY")

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "benchmark:project_list"
LOGOUT_REDIRECT_URL = "login"

DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
BENCHWRIGHT_MAX_UPLOAD_BYTES = env("MAX_UPLOAD_MB") * 1024 * 1024
BENCHWRIGHT_MAX_IMAGE_PIXELS = env("MAX_IMAGE_PIXELS")
# The largest audio file (an m&m's task's speech input) an import or an upload stores.
BENCHWRIGHT_MAX_AUDIO_BYTES = env("MAX_AUDIO_MB") * 1024 * 1024
# Deriving an image from a recipe stops before its next step after this many seconds; the pixel
# limits (per step MAX_IMAGE_PIXELS, per recipe four times that) bound each step.
BENCHWRIGHT_DERIVE_SECONDS = env("DERIVE_SECONDS")

# The default model endpoint (OpenAI-compatible chat completions); a project may set its own
# in Project.settings["model"]. Empty means no model: the pages say how to configure one.
BENCHWRIGHT_MODEL_BASE_URL = env("BENCHWRIGHT_MODEL_BASE_URL")
BENCHWRIGHT_MODEL_NAME = env("BENCHWRIGHT_MODEL_NAME")
BENCHWRIGHT_MODEL_API_KEY = env("BENCHWRIGHT_MODEL_API_KEY")
BENCHWRIGHT_MODEL_TIMEOUT = env("BENCHWRIGHT_MODEL_TIMEOUT")
BENCHWRIGHT_MODEL_MAX_RETRIES = env("BENCHWRIGHT_MODEL_MAX_RETRIES")
BENCHWRIGHT_MODEL_CONCURRENCY = env("BENCHWRIGHT_MODEL_CONCURRENCY")
# At most this many requests a minute to the model endpoint, from all threads; 0: no cap.
BENCHWRIGHT_MODEL_RPM = env("BENCHWRIGHT_MODEL_RPM")
# At most this many images in one judge call; a call with more fails with a message.
JUDGE_MAX_IMAGES = env("JUDGE_MAX_IMAGES")
# An annotator may undo and change a judgment for this many minutes after submitting it,
# while its item's outcome is pending (annotation.judgment_tasks.services.judgment_edit).
JUDGMENT_UNDO_MINUTES = env("JUDGMENT_UNDO_MINUTES")
# Rendering answers (review.answer_rendering): the endpoints that execute Diffusion (image
# generation), Edit (image edit; both OpenAI-compatible images APIs) and Search (an HTTP JSON
# image search). Empty: those calls are drawn as labelled placeholders. Code runs in
# benchmark.sandbox. See docs/reference/rendering.md.
BENCHWRIGHT_IMAGE_GEN_BASE_URL = env("BENCHWRIGHT_IMAGE_GEN_BASE_URL")
BENCHWRIGHT_IMAGE_GEN_MODEL = env("BENCHWRIGHT_IMAGE_GEN_MODEL")
BENCHWRIGHT_IMAGE_GEN_API_KEY = env("BENCHWRIGHT_IMAGE_GEN_API_KEY")
BENCHWRIGHT_IMAGE_GEN_SIZE = env("BENCHWRIGHT_IMAGE_GEN_SIZE")
BENCHWRIGHT_IMAGE_EDIT_BASE_URL = env("BENCHWRIGHT_IMAGE_EDIT_BASE_URL")
BENCHWRIGHT_IMAGE_EDIT_MODEL = env("BENCHWRIGHT_IMAGE_EDIT_MODEL")
BENCHWRIGHT_IMAGE_EDIT_API_KEY = env("BENCHWRIGHT_IMAGE_EDIT_API_KEY")
BENCHWRIGHT_IMAGE_SEARCH_URL = env("BENCHWRIGHT_IMAGE_SEARCH_URL")
BENCHWRIGHT_IMAGE_SEARCH_API_KEY = env("BENCHWRIGHT_IMAGE_SEARCH_API_KEY")
BENCHWRIGHT_IMAGE_SEARCH_PARAM = env("BENCHWRIGHT_IMAGE_SEARCH_PARAM")
# Search results are downloaded by the server: hosts on private networks are refused unless
# this is true (a search service inside your own network).
BENCHWRIGHT_IMAGE_SEARCH_ALLOW_PRIVATE = env("BENCHWRIGHT_IMAGE_SEARCH_ALLOW_PRIVATE")
# Seconds a provider may take per call; tool calls executed at once (0: twice the CPUs, code
# programs at most one per CPU).
BENCHWRIGHT_RENDER_TIMEOUT = env("BENCHWRIGHT_RENDER_TIMEOUT")
BENCHWRIGHT_RENDER_WORKERS = env("BENCHWRIGHT_RENDER_WORKERS")
# The environment variables a project's model settings may name as its key ("api_key_env"),
# comma-separated. "NAME=https://host/v1" allows NAME for that base URL only. The default key
# variable, BENCHWRIGHT_MODEL_API_KEY, only ever goes to BENCHWRIGHT_MODEL_BASE_URL.
MODEL_API_KEY_ENV_ALLOWLIST = env("MODEL_API_KEY_ENV_ALLOWLIST")
# Tool providers of evaluation runs (review.evaluation): dotted paths of factories
# ``factory(project) -> Provider | None`` (benchmark.evaluation.base.Provider), listed by the
# operator, never by a project. The defaults offer the retrieval API and the m&m's tool API a
# project configures (review/evaluation/providers.py); with none, tools answer "not available
# here".
EVALUATION_TOOL_PROVIDERS = env.list(
    "EVALUATION_TOOL_PROVIDERS",
    default=[
        "review.evaluation.providers.retrieval_provider",
        "review.evaluation.providers.mms_tool_provider",
    ],
)
# An evaluation started from the page (or resumed there) is split into chunk jobs of at most
# this many items, so several Celery workers share one run (docs/reference/evaluation.md).
EVALUATION_CHUNK_ITEMS = env("EVALUATION_CHUNK_ITEMS")

# Limits of one run of a Code tool call's program in the sandbox (benchmark/sandbox/;
# docs/reference/sandbox.md); the caller passes them on: SandboxLimits(**SANDBOX_LIMITS).
SANDBOX_LIMITS = {
    "wall_seconds": env("SANDBOX_WALL_SECONDS"),
    "cpu_seconds": env("SANDBOX_CPU_SECONDS"),
    "memory_mb": env("SANDBOX_MEMORY_MB"),
    "max_processes": env("SANDBOX_MAX_PROCESSES"),
    "max_output_bytes": env("SANDBOX_MAX_OUTPUT_KB") * 1024,
    "max_image_bytes": env("SANDBOX_MAX_IMAGE_MB") * 1024 * 1024,
    "max_images": env("SANDBOX_MAX_IMAGES"),
    "workdir_mb": env("SANDBOX_WORKDIR_MB"),
}

# Content-Security-Policy (django-csp 4): the app's own scripts and styles only. The templates
# have no inline scripts, event handlers, <style> blocks or style attributes (bars take
# class="pct-N"; htmx's indicator styles are in app.css), and a test keeps it so; nothing here
# allows 'unsafe-inline' or 'unsafe-eval'. Images may also be data: and blob: URLs (the image
# editor's previews). The API docs use the split Swagger view, which loads its script by URL.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:", "blob:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    },
}

REST_FRAMEWORK = {
    # The token first: its scheme is the WWW-Authenticate challenge of a 401 (no credentials
    # or bad ones). Basic auth stays for existing scripts (throttled by django-axes).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "benchmark.api_tokens.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON within benchmark.limits (depth, size, no NUL): bad bodies answer 400, never 500.
    "DEFAULT_PARSER_CLASSES": [
        "benchmark.api.parsers.LimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "benchmark.api.schema.BoundedPageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "benchmark.api.exceptions.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Benchwright API",
    "DESCRIPTION": "Projects, items, responses, plans, trajectories, images and jobs.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from the drf-spectacular-sidecar package, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Error answers and bounded ids in every operation (benchmark/api/schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "benchmark.api.schema.error_responses",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ItemStatusEnum": "benchmark.models.ItemStatus",
        "JobStatusEnum": "benchmark.models.JobStatus",
    },
}

# Computed figures (the agreement page's) are cached, shown up to 30 s old while their inputs
# change (review/agreement/selectors.py). CACHE_URL when set; else, with a Redis broker, that
# Redis server's next database (broker /0: cache /1), shared by every web process; else each
# process's own memory. CACHE_SOURCE says which rule chose it (bin/serve prints it).
_cache_url, CACHE_SOURCE = cache_url_resolve(
    cache_url=env("CACHE_URL"), broker_url=env("CELERY_BROKER_URL")
)
CACHES = {"default": env.cache_url_config(_cache_url)}

# Celery: no broker configured means tasks run in-process, on the same code path.
CELERY_BROKER_URL = env("CELERY_BROKER_URL") or "memory://"
CELERY_TASK_ALWAYS_EAGER = not env("CELERY_BROKER_URL")
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_RESULT_BACKEND = None
# Late acks only where a task says so: every job task is guarded on its Job's status (a repeated
# delivery does nothing twice), so it acks late and a message a dead worker never started is
# delivered again. Not requeued on worker loss: the job is already "running", a second delivery
# would do nothing, and `jobs_sweep` (run on every poll) marks it failed with a retry instead.
CELERY_TASK_ACKS_LATE = False
CELERY_TASK_REJECT_ON_WORKER_LOST = False
CELERY_TASK_TIME_LIMIT = 60 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 59 * 60
# Redis redelivers an unacknowledged message after the visibility timeout: longer than any task
# may run, so a running task's message is not handed to a second worker.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT + 10 * 60}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
# Task modules outside an app's tasks.py, which autodiscovery does not find: the one job task
# that runs every kind of job (``benchmark.jobs.kinds`` says what each kind runs).
CELERY_IMPORTS = ["benchmark.jobs.tasks"]

if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env("SECURE_SSL_REDIRECT")
    SECURE_HSTS_SECONDS = 60 * 60 * 24 * 30
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_CONTENT_TYPE_NOSNIFF = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
