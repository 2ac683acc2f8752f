"""The worker threads that run a publisher's synchronous code (handlers, tools).

The pool is the one the in-process actors use (``infra.actors.handlers``): a pool of
their own, so a handler that blocks for long neither queues the other tasks'
handlers nor starves the server's own file I/O.
"""

from cleveragents.infra.actors.handlers import run_user_code

__all__ = ["run_user_code"]
