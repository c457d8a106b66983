"""The one error of reading a cluster's security settings: which key, and why."""

from __future__ import annotations


class SecurityProblem(ValueError):
    """A security setting one of the client stacks cannot honour; ``key`` is the
    unprefixed client key (the caller adds ``<alias>.``), ``str()`` the reason."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        super().__init__(message)
