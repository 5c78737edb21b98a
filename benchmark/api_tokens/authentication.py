"""The API's token authentication (DRF): ``Authorization: Token <key>`` (or ``Bearer <key>``,
what clients generated from the schema send by default). First of the authentication classes,
so a request without credentials answers 401 with ``WWW-Authenticate: Token``. Also its
OpenAPI security scheme (drf-spectacular), so generated clients know it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

KEYWORDS = (b"token", b"bearer")
HEADER_HELP = 'Send the key as "Authorization: Token <key>": one key, no spaces in it.'


class ApiTokenAuthentication(BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in KEYWORDS:
            return None  # basic auth or the session may still authenticate it
        if len(parts) != 2:
            raise AuthenticationFailed(HEADER_HELP)
        try:
            key = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed(HEADER_HELP) from None
        from benchmark.api_tokens import services
        from benchmark.login_throttle import client_ip

        try:
            token = services.api_token_check(key=key)
        except services.TokenRefused as exc:
            raise AuthenticationFailed(exc.message) from None
        services.api_token_use_record(token=token, address=client_ip(request))  # type: ignore[arg-type]
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="api"'


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = ApiTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                'A personal API token with the prefix "Token": "Authorization: Token <key>". '
                "Make one on /api-tokens/ or with `python manage.py api_token create`."
            ),
        }
