"""The baseline for bench_stdio.py: a minimal, stock pygls 2.x language server.

It registers one custom method with the same name as ours and otherwise keeps every
pygls default (converter, protocol class, stdin reader, logging), so the benchmark
shows what pygls gives out of the box.
"""

from pygls.lsp.server import LanguageServer

server = LanguageServer("bare-pygls", "0.0.0")


@server.feature("_cleveragents/health/check")
async def health_check(params):
    return {"status": "ok"}


if __name__ == "__main__":
    server.start_io()
