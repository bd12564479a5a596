"""Every API error is JSON: DRF's handler, plus a JSON body for errors DRF does not handle."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

from worlds import ratelimit


def json_exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, ratelimit.RateLimited):
        exc = exceptions.Throttled(detail=str(exc))
    if isinstance(exc, DjangoValidationError):
        # Service-layer validation errors become 400s with field messages.
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        exc = exceptions.ValidationError(detail=detail)
    return exception_handler(exc, context)
