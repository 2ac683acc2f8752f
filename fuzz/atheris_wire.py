"""A coverage-guided fuzzer for the wire, run by hand (see fuzz/README.md).

Each input drives one of four targets, picked by its first byte:
  0  the LSP frame reader (bytes as they would come on stdin, limit 4096 bytes)
  1  JSON-RPC decoding and classification (the envelope)
  2  the in-process facade over a real container (any body, or a request with
     generated params for a method from the method table)
  3  both A2A codecs' decoders on the input as JSON
A target may refuse input only with the project's own errors; anything else, a
-32603 from the facade, or a malformed answer stops the fuzzer with the input saved.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import tempfile
from pathlib import Path

import atheris

from cleveragents.a2a import envelope, methods
from cleveragents.a2a.codecs import get_codec
from cleveragents.a2a.errors import A2AError
from cleveragents.a2a.facade import A2ALocalFacade
from cleveragents.config import Settings
from cleveragents.container import Container
from cleveragents.domain.errors import ValidationError
from cleveragents.transports.lsp.framing import FrameError, FrameReader, read_frames

MAX_MESSAGE_SIZE = 4096
# Bad frames are logged as warnings; internal errors (ERROR) still show.
logging.basicConfig(level=logging.ERROR)

# Every method is called once before instrumenting: the services import their
# modules lazily, and ``instrument_all`` covers only what is loaded by then.
LOOP = asyncio.new_event_loop()
WORKSPACE = Path(tempfile.mkdtemp(prefix="atheris-workspace-"))
CONTAINER = Container(Settings(workspace=WORKSPACE, memory=True))
FACADE = A2ALocalFacade(CONTAINER)
LOOP.run_until_complete(CONTAINER.start())
for _name, _spec in sorted(methods.METHODS.items()):
    _params = json.loads(json.dumps(_spec.example).replace("https://example.invalid", "http://127.0.0.1:9"))
    _body = json.dumps({"jsonrpc": "2.0", "id": 0, "method": _name, "params": _params})
    LOOP.run_until_complete(asyncio.wait_for(FACADE.handle_raw(_body), 10))

METHOD_NAMES = sorted(methods.METHODS)
CODECS = (get_codec("1.0"), get_codec("0.3"))
DECODERS = sorted(name for name in dir(CODECS[0]) if name.startswith("decode_"))


def fuzz_framing(data: bytes) -> None:
    bodies: list[bytes] = []
    errors: list[FrameError] = []

    async def go() -> None:
        reader = asyncio.StreamReader(limit=1 << 16)
        reader.feed_data(data)
        reader.feed_eof()
        await asyncio.wait_for(read_frames(FrameReader(reader, MAX_MESSAGE_SIZE), bodies.append, errors.append), 5)

    LOOP.run_until_complete(go())
    assert all(len(body) <= MAX_MESSAGE_SIZE for body in bodies)
    assert all(error.code in (-32700, -32600) and error.message for error in errors)


def fuzz_envelope(data: bytes) -> None:
    try:
        envelope.classify(envelope.decode(data))
    except A2AError:
        pass


def check_answer(answer: object) -> None:
    if answer is None:
        return
    assert isinstance(answer, dict) and answer.get("jsonrpc") == "2.0" and "id" in answer, answer
    assert ("result" in answer) != ("error" in answer), answer
    if "error" in answer:
        assert answer["error"]["code"] != -32603, answer  # bad input is never an internal error
    json.dumps(answer, allow_nan=False)


def fuzz_facade(fdp: atheris.FuzzedDataProvider) -> None:
    if fdp.ConsumeBool():
        body = fdp.ConsumeBytes(fdp.remaining_bytes())
    else:
        method = METHOD_NAMES[fdp.ConsumeIntInRange(0, len(METHOD_NAMES) - 1)]
        try:
            params = json.loads(fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes()))
        except (ValueError, RecursionError):
            return
        if "http" in json.dumps(params):
            return  # push configs: no URL but loopback is ever a target, so none at all
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    check_answer(LOOP.run_until_complete(asyncio.wait_for(FACADE.handle_raw(body), 10)))


def fuzz_codecs(data: bytes) -> None:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return
    for codec in CODECS:
        for name in DECODERS:
            try:
                getattr(codec, name)(value)
            except ValidationError:
                pass


def test_one_input(data: bytes) -> None:
    if not data:
        return
    target, rest = data[0] % 4, data[1:]
    if target == 0:
        fuzz_framing(rest)
    elif target == 1:
        fuzz_envelope(rest)
    elif target == 2:
        fuzz_facade(atheris.FuzzedDataProvider(rest))
    else:
        fuzz_codecs(rest)


def main() -> None:
    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
