"""Errors of the package: OctetError, the status check of every C call, and
how an exception raised inside a Python callback the library called reaches
the caller."""

import threading as _threading

from ._lib import lib as _libc


class OctetError(RuntimeError):
    """A failed Octet call: .status (int), .status_name and the message."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = _libc.octet_status_name(status).decode()
        super().__init__(f"{self.status_name}: {message}")


# A Python exception raised inside a callback the library called (a recipe's
# amax/scale callback, a communicator) cannot cross the C frames: the
# callback returns a non-success status instead and parks the exception
# here, and the _check of the C call that failed chains it (__cause__).
_callback_errors = _threading.local()

# What a callback returns when the Python code raised (an OctetError raised
# by the callback returns its own status).
_CALLBACK_FAILURE_STATUS = 5  # OCTET_STATUS_BACKEND_ERROR


def _callback_failed(exc):
    """Records exc (raised by a Python callback) and returns the status the
    callback hands back to the library."""
    _callback_errors.pending = exc
    if isinstance(exc, OctetError):
        return exc.status
    return _CALLBACK_FAILURE_STATUS


def _check(status):
    pending = getattr(_callback_errors, "pending", None)
    _callback_errors.pending = None
    if status != 0:
        message = _libc.octet_last_error_message().decode()
        if pending is not None:
            message += f" (a Python callback raised {type(pending).__name__}: {pending})"
        raise OctetError(status, message) from pending

