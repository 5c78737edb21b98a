"""System checks of our own, for `manage.py check --deploy`."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register


@register(Tags.security, deploy=True)
def check_secret_key(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """Django's security.W009 passes the development key (it is long and varied), but it is in
    the repository: anyone can forge sessions and password-reset links signed with it."""
    if settings.SECRET_KEY != settings.DEV_SECRET_KEY:
        return []
    return [
        Error(
            "SECRET_KEY is the public development key from benchmark/settings.py.",
            hint=(
                "Set SECRET_KEY in the environment (or .env) to a long random value of at "
                "least 50 characters, and DEBUG=false; with DEBUG off the app refuses to "
                "start without one."
            ),
            id="benchwright.E001",
        )
    ]
