"""Keeping secrets out of sight: which config keys hold secrets, masking them, scrubbing text.

Two rules, used wherever a configuration, a client config or an error is shown (logs,
REST answers, ``make up``'s summary, error lines):

* by key: :func:`is_secret_key` (``*.password``, ``sasl.jaas.config``, ``ssl.keystore.key``,
  ``ssl.key.pem``, ``*secret*``, ``*token*``...) -> :func:`redact_config` shows
  :data:`MASK` instead of the value;
* by value: every value read through a config provider (``${file:...}``, ``${env:...}``)
  or held by a secret key when a configuration is loaded is remembered
  (:func:`remember_secret`), and :func:`redact_text` replaces it in any text, such as a
  librdkafka error string or a log line (:class:`RedactingFilter` does it for logging).

The registry is per process and only grows; values shorter than
:data:`MIN_SECRET_LENGTH` or plain numbers and booleans are not remembered, since masking
them would blank unrelated text (they are still masked by key).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping

from srm_common.jaas import JaasSyntaxError, parse_jaas

MASK = "[hidden]"
MIN_SECRET_LENGTH = 4
_SECRET_SUFFIXES = (
    "password",
    "sasl.jaas.config",
    "ssl.keystore.key",
    "ssl.key.pem",
    "ssl_key",
    "secret",
    "token",
    "credentials",
)
_SECRET_WORDS = ("secret", "token", "password", "credential")

_lock = threading.Lock()
_known: set[str] = set()


def is_secret_key(key: str) -> bool:
    """True when ``key`` (any prefix: ``primary.consumer.ssl.key.password``) holds a secret."""
    lowered = key.lower()
    return lowered.endswith(_SECRET_SUFFIXES) or any(w in lowered for w in _SECRET_WORDS)


def redact_config(keys: Mapping[str, object]) -> dict[str, object]:
    """A copy of ``keys`` with secret values replaced by :data:`MASK` (by key and by value:
    a non-secret key whose value holds a remembered secret is masked too)."""
    shown: dict[str, object] = {}
    for key, value in keys.items():
        if is_secret_key(key):
            shown[key] = MASK
        elif isinstance(value, str):
            shown[key] = redact_text(value)
        else:
            shown[key] = value
    return shown


def remember_secret(value: str) -> None:
    """Remember ``value`` so that :func:`redact_text` masks it from now on."""
    text = value.strip()
    if len(text) < MIN_SECRET_LENGTH or text.lower() in ("true", "false") or text.isdigit():
        return
    with _lock:
        _known.add(value)
        if text != value:
            _known.add(text)


def remember_config_secrets(keys: Mapping[str, str]) -> None:
    """Remember the values of every secret key of ``keys`` (and, for a JAAS config, its
    password option, so a password is masked when shown on its own)."""
    for key, value in keys.items():
        if is_secret_key(key) and isinstance(value, str):
            remember_secret(value)
            if key.endswith("jaas.config"):
                for option in _jaas_values(value):
                    remember_secret(option)


def redact_text(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every remembered secret (and each of ``extra``) replaced by MASK;
    longest first, so a secret containing another is masked whole."""
    with _lock:
        secrets = set(_known)
    secrets.update(v for v in extra if len(v.strip()) >= MIN_SECRET_LENGTH)
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def forget_secrets() -> None:
    """Empty the registry (tests)."""
    with _lock:
        _known.clear()


class RedactingFilter(logging.Filter):
    """A logging filter that renders a record's message and masks remembered secrets in
    it (and in the exception text), so no handler ever formats a secret."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact_text(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            masked_exc = redact_text(text)
            if masked_exc != text:
                record.exc_info, record.exc_text = None, masked_exc
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Add :class:`RedactingFilter` to every handler of ``logger`` (the root by default),
    once; handlers added later are not covered, so call it after logging is set up."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def _jaas_values(text: str) -> list[str]:
    """The secret options of a JAAS config (``password``, ``*secret*``...); the user name
    stays readable, since error lines name it to say who was refused."""
    try:
        options = parse_jaas(text).options
    except JaasSyntaxError:
        return []
    return [value for name, value in options.items() if is_secret_key(name)]
