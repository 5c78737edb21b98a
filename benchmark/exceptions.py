"""Domain errors a user can fix. One API handler turns them into 400/403/404/409."""


class DomainError(Exception):
    status_code = 400

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class ValidationFailed(DomainError):
    status_code = 400


class PermissionDenied(DomainError):
    status_code = 403


class NotFound(DomainError):
    status_code = 404


class Conflict(DomainError):
    status_code = 409
