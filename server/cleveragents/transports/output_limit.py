"""How much output may wait for a client that isn't reading, on any transport
(stdio as a whole, each HTTP stream): past it the server gives up on that client."""

from __future__ import annotations

import os

DEFAULT_MAX_OUTPUT_BUFFER = 64 * 1024 * 1024
MAX_OUTPUT_BUFFER_ENV = "CLEVERAGENTS_MAX_OUTPUT_BUFFER"


def max_output_buffer_default() -> int:
    """``CLEVERAGENTS_MAX_OUTPUT_BUFFER`` bytes, else 64 MiB."""
    value = os.environ.get(MAX_OUTPUT_BUFFER_ENV, "")
    return int(value) if value.isascii() and value.isdigit() and int(value) > 0 else DEFAULT_MAX_OUTPUT_BUFFER
