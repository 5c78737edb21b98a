"""How a feature's URLconf is mounted under a prefix that names it, and how a path that moved
answers with a redirect to where it went.

Every feature package's ``urls.py`` lists its routes relative to its prefix, in up to two lists:

- ``project_urlpatterns``: the feature's pages of one project, mounted at
  ``projects/<project_id>/<prefix>/`` (``/projects/3/tag-review/items/5/responses/11/review/``);
- ``urlpatterns``: its pages of one of its own objects or of no project, mounted at
  ``<prefix>/`` (``/judgment-tasks/7/next/``).

The prefix is the package's name with ``-`` for ``_`` (``annotation/tag_review/`` is
``tag-review``), so a page's path names the folder that serves it. The one exception is
``benchmark/projects/``, the site's root: the project list, a project's page and an item's
page, under which every other feature's project pages sit. ``tests/test_url_layout.py`` checks
both rules.

A route that moved keeps answering at its old path: ``benchmark/old_urls.py`` is a table of
(old pattern, new route name) pairs, each made a route by :func:`moved`: 301 for GET and HEAD,
308 for any other method, the query string kept. The redirect checks nothing itself and changes
nothing; the new route checks permissions as before.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.http.response import HttpResponseRedirectBase
from django.urls import URLPattern, URLResolver, include, path, re_path, reverse
from django.views.decorators.csrf import csrf_exempt

PROJECT_PREFIX = "projects/<int:project_id>/"


def feature_urls(prefix: str, module: str) -> list[URLResolver]:
    """The routes of the feature whose URLconf is ``module``: its ``project_urlpatterns`` under
    ``projects/<project_id>/<prefix>/`` and its ``urlpatterns`` under ``<prefix>/``."""
    urls = import_module(module)
    project = getattr(urls, "project_urlpatterns", [])
    other = getattr(urls, "urlpatterns", [])
    if not project and not other:
        raise ValueError(f"{module} has neither project_urlpatterns nor urlpatterns")
    mounted = []
    if project:
        mounted.append(path(f"{PROJECT_PREFIX}{prefix}/", include(project)))
    if other:
        mounted.append(path(f"{prefix}/", include(other)))
    return mounted


class HttpResponsePermanentRedirectKeepMethod(HttpResponseRedirectBase):
    """308: like 301, but the client repeats the same method and body at the new URL."""

    status_code = 308


@csrf_exempt  # it writes nothing; the new URL checks the CSRF token of what is re-sent to it
def _moved(request: HttpRequest, *args: Any, to: str, **kwargs: Any) -> HttpResponse:
    url = reverse(to, args=args, kwargs=kwargs)
    if query := request.META.get("QUERY_STRING", ""):
        url = f"{url}?{query}"
    if request.method in ("GET", "HEAD"):
        return HttpResponsePermanentRedirect(url)
    return HttpResponsePermanentRedirectKeepMethod(url)


def moved(old: str, to: str) -> URLPattern:
    """The old path (a ``path()`` route, or a regex starting with ``^``) answering 301 (GET,
    HEAD) or 308 (any other method) to the route named ``to``, with the same kwargs and the
    query string."""
    make = re_path if old.startswith("^") else path
    return make(old, _moved, {"to": to})
