"""JSON-RPC notifications over HTTP: answered with 202 at once, run afterwards.

A caller that sends one notification after another, each answered before its call
has run, could start calls without end, each holding memory and its share of the
loop. The server runs a bounded number at once; past it, a notification is run
before its 202, so the caller's own connection waits, and the connection limit
bounds those.
"""

from __future__ import annotations

import asyncio
import time

import httpx

from tests.contract.runners import UvicornServer

SENT = 200
CONNECTIONS = 8


async def test_notifications_run_a_bounded_number_at_once_and_every_one_runs(workspace):
    from cleveragents.config import Settings
    from cleveragents.transports.http.app import build_app
    from tests.fakes.agents import gauge

    app = build_app(settings=Settings(workspace=workspace, memory=True,
                                      default_actor="python/tests.fakes.agents:gauge"))
    gauge.reset()
    async with UvicornServer(app) as url:
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=CONNECTIONS), timeout=60) as http:

            async def notify(n: int) -> int:
                message = {"role": "ROLE_USER", "parts": [{"text": "count me"}], "messageId": f"note-{n}"}
                answer = await http.post(f"{url}/a2a", headers={"A2A-Version": "1.0"},
                                         json={"jsonrpc": "2.0", "method": "SendMessage",
                                               "params": {"message": message}})
                return answer.status_code

            assert set(await asyncio.gather(*(notify(n) for n in range(SENT)))) == {202}
        ends = time.monotonic() + 60
        while gauge.done < SENT and time.monotonic() < ends:
            await asyncio.sleep(0.05)
    assert gauge.done == SENT, f"{gauge.done} of {SENT} notifications ran"
    from cleveragents.transports.http.jsonrpc import MAX_BACKGROUND_CALLS

    # Those in the background, and one more on each connection the caller holds.
    assert gauge.most <= MAX_BACKGROUND_CALLS + CONNECTIONS, f"{gauge.most} calls ran at once"
