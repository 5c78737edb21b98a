"""Shared type aliases and narrowing helpers for users and requests.

The project uses Django's default ``auth.User``. Services that write take a ``User`` (they need
a real user to store); selectors and permission checks take ``AnyUser``, since they also answer
for anonymous visitors. Views narrow ``request.user`` with ``request_user``."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails
from rest_framework.request import Request

__all__ = ["AnyUser", "HtmxHttpRequest", "User", "request_user"]

AnyUser = User | AnonymousUser


class HtmxHttpRequest(HttpRequest):
    """A request that went through django-htmx's middleware (for type checking)."""

    htmx: HtmxDetails


def request_user(request: HttpRequest | Request) -> User:
    """The logged-in user of a request; for views that require a login, so an anonymous
    user here answers 403."""
    user = request.user
    if not isinstance(user, User):
        raise PermissionDenied
    return user
