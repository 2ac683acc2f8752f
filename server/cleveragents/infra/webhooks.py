"""Posting JSON to webhooks (push notifications), with the standard library.

Each call blocks, so callers run it in a worker thread. Errors come back as a short
description, never as an exception: a failing webhook must not disturb its task.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

USER_AGENT = "cleveragents-push/1"


def post_json(url: str, body: Any, headers: Mapping[str, str], timeout: float = 10.0) -> str | None:
    """POST ``body``; ``None`` on a 2xx answer, else what went wrong."""
    if not url.startswith(("http://", "https://")):
        return f"unsupported URL scheme in {url!r}"
    request = urllib.request.Request(
        url, data=json.dumps(body).encode("utf-8"), method="POST",
        headers={"Content-Type": "application/json", "User-Agent": USER_AGENT, **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - scheme checked above
            response.read(65536)
            return None if 200 <= response.status < 300 else f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
