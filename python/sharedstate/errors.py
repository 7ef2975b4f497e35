"""Errors raised by the Python API."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

_JAVA_CLASS = "io.sharedstate.core.SharedStateException"


class SharedStateError(ValueError):
    """Bad input or misuse of a State: the message names the problem and what is allowed."""


def sharedstate_cause(java_exception) -> str | None:
    """The message of the SharedStateException in a Java cause chain, if there is one."""
    cause = java_exception
    while cause is not None:
        if cause.getClass().getName() == _JAVA_CLASS:
            return str(cause.getMessage())
        cause = cause.getCause()
    return None


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Turns a SharedStateException raised in the JVM into a SharedStateError."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    try:
        yield
    except (Py4JJavaError, CapturedException) as e:
        # PySpark turns some Java exceptions into its own (keeping the original as _origin).
        java = getattr(e, "java_exception", None) or getattr(e, "_origin", None)
        message = sharedstate_cause(java) if java is not None else None
        if message is None:
            raise
        raise SharedStateError(message) from None
