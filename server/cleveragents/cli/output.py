"""How the CLI prints: human tables by default, the raw result with ``--json``,
errors as one line on stderr with an exit code that says what went wrong."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO

from cleveragents.cli.backend import BAD_SETUP, UNREACHABLE, CallError

# Exit codes. Usage errors are 2, as argparse makes them.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_CODES: dict[int | str, int] = {
    -32602: EXIT_USAGE,  # invalid params: the arguments were wrong
    BAD_SETUP: EXIT_USAGE,  # no such workspace, or a bad configuration file
    -32601: EXIT_USAGE,  # no such method on that backend
    -32001: 3,  # not found
    -32004: 4,  # invalid state, or the service is not available here
    -32002: 5,  # authentication required (standard methods: task not cancelable)
    -32003: 5,  # forbidden (a guard refused a path)
    -32005: 6,  # already exists
    -32006: 7,  # budget or limit exceeded
    -32007: 8,  # A2A version not supported
    -32009: 8,
    -32008: 9,  # plan error, e.g. files changed on disk since execute
    UNREACHABLE: 10,  # the backend could not be reached
}
EXIT_INTERRUPTED = 130


def exit_code_for(code: int | str) -> int:
    return EXIT_CODES.get(code, EXIT_ERROR)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def error_line(error: CallError) -> str:
    """``agents: <message> (<details>) [code]`` — the one line a failure prints."""
    details = ""
    if isinstance(error.data, Mapping):
        shown = {k: v for k, v in error.data.items() if k not in {"errors", "method", "service"} and v not in (None, "")}
        if errors := error.data.get("errors"):
            shown["invalid"] = "; ".join(_field_error(e) for e in errors if isinstance(e, Mapping))
        if shown:
            details = " (" + ", ".join(f"{k}={_scalar(v)}" for k, v in shown.items()) + ")"
    code = f" [{error.code}]" if isinstance(error.code, int) else ""
    return _one_line(f"agents: {error.message}{details}{code}")


def _field_error(error: Mapping[str, Any]) -> str:
    message = str(error.get("msg", "")).removeprefix("Value error, ")
    where = ".".join(map(str, error.get("loc") or []))
    return f"{where}: {message}" if where else message


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


class Output:
    def __init__(self, as_json: bool, stdout: TextIO | None = None, stderr: TextIO | None = None):
        self.as_json = as_json
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr

    def result(self, result: Any, render: Callable[[Any], str]) -> None:
        if self.as_json:
            self.json(result)
        else:
            text = render(result)
            if text:
                self.stdout.write(text if text.endswith("\n") else text + "\n")

    def json(self, value: Any, indent: int | None = 2) -> None:
        self.stdout.write(json.dumps(value, indent=indent, ensure_ascii=False, default=str) + "\n")
        self.stdout.flush()

    def error(self, error: CallError) -> int:
        if self.as_json:
            self.json({"error": {"code": error.code, "message": error.message, "data": error.data}})
        self.stderr.write(error_line(error) + "\n")
        return exit_code_for(error.code)


def table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str | tuple[str, str]], empty: str = "(none)") -> str:
    """Rows as aligned columns; a column is a key, or ``(key, heading)``."""
    keys = [c if isinstance(c, str) else c[0] for c in columns]
    headings = [(c if isinstance(c, str) else c[1]).upper() for c in columns]
    cells = [[_cell(row.get(key)) for key in keys] for row in rows]
    if not cells:
        return empty
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headings)]
    lines = [headings, *cells]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in lines)



def page_table(result: Mapping[str, Any], key: str, columns: Sequence[str | tuple[str, str]], empty: str) -> str:
    """One page of a paged list, with the option that fetches the next page."""
    text = table(result.get(key, []), columns, empty=empty)
    return text + (f"\nmore: --cursor {result['next_cursor']}" if result.get("next_cursor") else "")

def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ",".join(_cell(v) for v in value) or "-"
    if isinstance(value, Mapping):
        return json.dumps(value, separators=(",", ":"), default=str)
    text = _one_line(str(value))
    return text if len(text) <= 80 else text[:77] + "..."


def fields(result: Mapping[str, Any], keys: Sequence[str]) -> str:
    """Some keys of a result, one ``key: value`` a line."""
    present = [k for k in keys if result.get(k) not in (None, "", [])]
    width = max((len(k) for k in present), default=0)
    return "\n".join(f"{k.ljust(width)}  {_cell(result[k])}" for k in present)


class ProgressBar:
    """Renders LSP work-done progress values (begin, report, end) as one line on stderr."""

    WIDTH = 24

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self._title = ""
        self._drawn = False
        self._width = 0
        self._percent = 0

    def __call__(self, value: Mapping[str, Any]) -> None:
        kind = value.get("kind")
        if kind == "begin":
            self._title = str(value.get("title", ""))
        if kind == "end":
            self._draw(100, str(value.get("message", "done")))
            self.close()
        else:
            self._draw(value.get("percentage"), str(value.get("message", "")))
        self.stream.flush()

    def _draw(self, percentage: Any, message: str) -> None:
        if isinstance(percentage, int | float):
            self._percent = int(percentage)
        done = self._percent
        filled = self.WIDTH * max(0, min(done, 100)) // 100
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        line = _one_line(f"{self._title} [{bar}] {done:3d}% {message}")
        line = line[: max(shutil.get_terminal_size((100, 20)).columns - 1, 20)]
        # Pad over the longer line drawn before it.
        self.stream.write("\r" + line.ljust(self._width))
        self._width = len(line)
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self._drawn, self._width = False, 0
