"""Domain errors a user can fix. One API handler turns them into 400/403/404/409."""


class DomainError(Exception):
    status_code = 400

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class ValidationFailed(DomainError):
    status_code = 400


class Forbidden(DomainError):
    """The user's role (or the item's state) does not allow the action: 403. (Named apart from
    Django's ``PermissionDenied``, which views raise for pages.)"""

    status_code = 403


class NotFound(DomainError):
    status_code = 404


class Conflict(DomainError):
    status_code = 409
