"""Calendar API errors in Google's JSON error body shape, so the real client raises the real HttpError."""

from __future__ import annotations

from typing import Any

_STATUS = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 409: "ALREADY_EXISTS", 410: "FAILED_PRECONDITION"}


class ApiError(Exception):
    """One failed call: HTTP code, Google's error reason, and the message the real service gives."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def body(self) -> dict[str, Any]:
        """`{"error": {code, message, errors: [{domain, reason, message}], status}}`."""
        return {
            "error": {
                "code": self.code,
                "message": self.message,
                "errors": [{"domain": "global", "reason": self.reason, "message": self.message}],
                "status": _STATUS[self.code],
            }
        }


def invalid(message: str) -> ApiError:
    """400 for a value the real service rejects (bad id, bad time, bad ordering)."""
    return ApiError(400, "invalid", message)


def not_found() -> ApiError:
    """404 for an id never inserted."""
    return ApiError(404, "notFound", "Not Found")


def duplicate() -> ApiError:
    """409 for an id that exists or existed: Calendar never lets an event id be reused."""
    return ApiError(409, "duplicate", "The requested identifier already exists.")


def deleted() -> ApiError:
    """410 for deleting an event that is already cancelled."""
    return ApiError(410, "deleted", "Resource has been deleted")
