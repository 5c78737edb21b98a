"""python manage.py api_token create --user USERNAME --name NAME [--expires-days N]
python manage.py api_token revoke --user USERNAME (--name NAME | --prefix bw_xxxxxxxx)
python manage.py api_token list [--user USERNAME]"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from benchmark.api_tokens import services
from benchmark.exceptions import DomainError
from benchmark.models import ApiToken
from benchmark.typing import User


class Command(BaseCommand):
    help = (
        "Personal API tokens, sent to the API as 'Authorization: Token <key>'. 'create' prints "
        "the new key alone on standard output (it is not stored, so this is the only time it "
        "is shown); 'revoke' stops one working; 'list' shows them without their keys."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(
            dest="action", required=True, metavar="{create,revoke,list}"
        )
        create = actions.add_parser("create", help="make a token and print its key")
        create.add_argument("--user", required=True, help="username of the token's owner")
        create.add_argument("--name", required=True, help="what it is for, e.g. CI")
        create.add_argument(
            "--expires-days", type=int, default=None, help="days it works (default: until revoked)"
        )
        revoke = actions.add_parser("revoke", help="stop a token working")
        revoke.add_argument("--user", required=True, help="username of the token's owner")
        which = revoke.add_mutually_exclusive_group(required=True)
        which.add_argument("--name", help="the token's name")
        which.add_argument("--prefix", help="the key's first 11 characters (bw_ and 8 digits)")
        listing = actions.add_parser("list", help="tokens, newest first (no keys)")
        listing.add_argument("--user", help="only this user's")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            self._create(options)
        elif action == "revoke":
            self._revoke(options)
        else:
            self._list(options)

    def _create(self, options: dict[str, Any]) -> None:
        user = _user(options["user"])
        try:
            token, key = services.api_token_create(
                user=user, actor=None, name=options["name"], expires_days=options["expires_days"]
            )
        except DomainError as exc:
            raise CommandError(f"no token made: {exc.message}") from None
        expires = (
            f"until {token.expires_at:%Y-%m-%d %H:%M} UTC" if token.expires_at else "until revoked"
        )
        self.stderr.write(
            f"API token {token.name!r} for {user.get_username()} ({token.prefix}…), valid "
            f"{expires}. The key (on standard output) is shown only now."
        )
        self.stdout.write(key)

    def _revoke(self, options: dict[str, Any]) -> None:
        user = _user(options["user"])
        tokens = ApiToken.objects.filter(user=user, revoked_at__isnull=True)
        if options["name"] is not None:
            token = tokens.filter(name=options["name"]).first()
            which = f"called {options['name']!r}"
        else:
            token = tokens.filter(prefix=options["prefix"]).first()
            which = f"starting {options['prefix']!r}"
        if token is None:
            raise CommandError(f"{user.get_username()} has no active API token {which}")
        try:
            services.api_token_revoke(token=token, actor=None)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"revoked API token {token.name!r} ({token.prefix}…) of {user.get_username()}"
        )

    def _list(self, options: dict[str, Any]) -> None:
        tokens = ApiToken.objects.select_related("user").order_by("user__username", "-created_at")
        if options["user"]:
            tokens = tokens.filter(user=_user(options["user"]))
        self.stdout.write("prefix\tuser\tname\tstate\tcreated\texpires\tlast used")
        for token in tokens:
            self.stdout.write(
                "\t".join(
                    [
                        token.prefix,
                        token.user.get_username(),
                        token.name,
                        token.state,
                        _date(token.created_at),
                        _date(token.expires_at) or "never",
                        _date(token.last_used_at) or "never",
                    ]
                )
            )


def _user(username: str) -> User:
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"--user: nobody is called {username!r}")
    return user


def _date(moment: Any) -> str:
    return f"{timezone.localtime(moment):%Y-%m-%d %H:%M}" if moment else ""
