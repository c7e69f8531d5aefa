"""Keep secrets out of everything the platform writes down (audit trail, tags, params, reports).

Secrets reach the platform only through the environment, files or Kubernetes Secrets
mounted as files; nothing here reads them. This module only recognises them, so a
writer can drop them: by the name of the field that holds them, and by value (the
current values of secret-looking environment variables), which also catches a secret
pasted into a free-text field.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"(secret|passw|token|credential|private[_-]?key|api[_-]?key|access[_-]?key)", re.I)
MIN_SECRET_CHARS = 6
"""Shorter values are not matched by value (they would blank out ordinary words)."""


def is_secret_name(name: str) -> bool:
    """True for names such as ``AWS_SECRET_ACCESS_KEY``, ``auth_token`` or ``db_password``."""
    return bool(_SECRET_NAME.search(name))


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of secret-looking environment variables, longest first."""
    environ = os.environ if environ is None else environ
    values = {v for k, v in environ.items() if is_secret_name(k) and len(v) >= MIN_SECRET_CHARS}
    return sorted(values, key=len, reverse=True)


def redact(value: Any, secrets: list[str] | None = None) -> Any:
    """``value`` with secret-named fields and secret values replaced by ``[redacted]`` (dicts and lists walked)."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(value, Mapping):
        return {
            key: REDACTED if is_secret_name(str(key)) and item not in ("", None) else redact(item, secrets)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(item, secrets) for item in value]
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
    return value
