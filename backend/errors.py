"""Errors a client can act on: each carries its HTTP status and a stable code."""


class AppError(Exception):
    status_code = 400
    code = "bad_request"

    def __init__(self, message: str, *, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.message = message
        self.headers = headers


class NotFound(AppError):
    status_code, code = 404, "not_found"


class Unauthorized(AppError):
    status_code, code = 401, "unauthorized"


class Forbidden(AppError):
    status_code, code = 403, "forbidden"


class IdentityNotVerified(Forbidden):
    """A customer identity whose signature does not match (or cannot be checked)."""

    code = "identity_not_verified"


class Conflict(AppError):
    status_code, code = 409, "conflict"


class ContextWindowFull(AppError):
    status_code, code = 409, "context_window_full"


class PayloadTooLarge(AppError):
    status_code, code = 413, "payload_too_large"


class InvalidInput(AppError):
    status_code, code = 422, "invalid_input"


class TooManyRequests(AppError):
    status_code, code = 429, "too_many_requests"


class ServiceUnavailable(AppError):
    status_code, code = 503, "unavailable"
