"""cleveragents-lsp with ``opentelemetry`` made unimportable, whatever is installed: the
baseline of the "tracing off costs nothing" rows. Ours with tracing off should start and
answer as fast as this one, which could not load opentelemetry if it tried.

The blocker is one meta path finder, asked first for each import; it costs both servers'
imports alike, to within a microsecond or so each."""

from __future__ import annotations

import runpy
import sys


class _Blocked:
    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.split(".", 1)[0] == "opentelemetry":
            raise ModuleNotFoundError(f"No module named {name!r} (blocked for the benchmark)", name=name)
        return None


sys.meta_path.insert(0, _Blocked())  # type: ignore[arg-type]
sys.argv[0] = "cleveragents-lsp"
runpy.run_module("cleveragents.transports.lsp", run_name="__main__", alter_sys=True)
