"""Which cache Django uses (``settings.CACHES``), decided once from the environment.

The agreement page keeps its figures for 30 seconds in Django's cache. In each process's own
memory that is one copy, and one computation, per web worker; with Redis every web process
shares one. So:

- ``CACHE_URL`` set: that cache (any django-environ cache URL, e.g. ``redis://host:6379/1``
  or ``locmemcache://`` to keep each process's own);
- else, a Redis broker (``CELERY_BROKER_URL=redis://`` or ``rediss://``): the broker's Redis
  server, another database number: the broker's plus one (``/0`` gives ``/1``), or, for the
  last database (15), the one before it;
- else: each process's own memory (``locmemcache://``).

No Django import here: settings.py calls it before Django is set up."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

LOCMEM_URL = "locmemcache://"
#: Redis has databases 0..15 unless configured otherwise.
REDIS_LAST_DB = 15

#: Where the cache URL came from (``settings.CACHE_SOURCE``).
FROM_CACHE_URL = "CACHE_URL"
FROM_BROKER = "CELERY_BROKER_URL"
FROM_DEFAULT = "default"


def _broker_db(path: str) -> int | None:
    """The database number in a Redis URL's path ("/3" -> 3, "" or "/" -> 0), None when the
    path is not a number."""
    name = path.strip("/")
    if not name:
        return 0
    return int(name) if name.isdigit() else None


def cache_url_resolve(*, cache_url: str, broker_url: str) -> tuple[str, str]:
    """(the cache URL to use, where it came from: FROM_CACHE_URL, FROM_BROKER or
    FROM_DEFAULT) for the values of CACHE_URL and CELERY_BROKER_URL ("" when unset)."""
    if cache_url.strip():
        return cache_url.strip(), FROM_CACHE_URL
    parts = urlsplit(broker_url.strip())
    if parts.scheme in ("redis", "rediss") and parts.hostname:
        db = _broker_db(parts.path)
        if db is not None:
            cache_db = db + 1 if db < REDIS_LAST_DB else db - 1
            url = urlunsplit((parts.scheme, parts.netloc, f"/{cache_db}", parts.query, ""))
            return url, FROM_BROKER
    return LOCMEM_URL, FROM_DEFAULT


def _where(location: object) -> str:
    """ "host:port, database N" for a Redis location, without user or password."""
    first = location[0] if isinstance(location, list | tuple) else location
    parts = urlsplit(str(first))
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    db = _broker_db(parts.path)
    return f"{parts.scheme}://{host}{port}, database {db if db is not None else parts.path}"


def cache_describe(*, config: dict[str, object], source: str) -> str:
    """One line saying which cache ``config`` (``CACHES["default"]``) is, where it came from
    and whether web processes share it (bin/serve prints it at start). Never shows a
    password."""
    backend = str(config.get("BACKEND", ""))
    origin = {
        FROM_CACHE_URL: "from CACHE_URL",
        FROM_BROKER: "from CELERY_BROKER_URL, as CACHE_URL is not set",
        FROM_DEFAULT: "CACHE_URL is not set and there is no Redis broker",
    }.get(source, source)
    if backend.endswith(".locmem.LocMemCache"):
        line = (
            f"each process's own memory ({origin}): every web process computes and keeps "
            "its own agreement figures"
        )
        if source != FROM_CACHE_URL:
            line += "; set CACHE_URL=redis://HOST:6379/1 to share them"
        return line
    if "redis" in backend.lower():
        return (
            f"Redis at {_where(config.get('LOCATION', ''))} ({origin}), shared by every web process"
        )
    return f"{backend} ({origin})"
