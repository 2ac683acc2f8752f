"""In-process agents for ``python/<module>:<callable>`` actor tests."""

from __future__ import annotations

import asyncio
from typing import Any

from cleveragents.domain.actor import InputRequired, Usage


def shout(text: str) -> str:
    return text.upper() + "!"


async def stream(text: str, turn: Any):
    for word in text.split():
        yield word + " "
    yield Usage(3, 2)
    if "?" in text:
        yield InputRequired("Which one?")


async def editor(text: str, turn: Any):
    """Edits through the turn's tools, as a model would."""
    result = await turn.invoke("fs.write", {"path": "NOTES.md", "content": f"{text}\n"})
    yield f"wrote {result['summary']}"


class Counter:
    name = "python/counter"

    async def respond(self, turn: Any):
        yield f"{len(turn.message.text())} characters"


counter = Counter()
NOT_CALLABLE = 42


async def slow_words(text: str, turn: Any):
    """Streams the text's words one every 0.2 s: time for a client to cancel mid-turn."""
    import asyncio

    for word in text.split():
        await asyncio.sleep(0.2)
        yield word + " "


async def tool_caller(text: str, turn: Any):
    """Lists the turn's tools when asked ``tools``; else calls the tool named first with
    ``name=value`` arguments (digits as integers), as a model would."""
    words = text.split()
    if words == ["tools"]:
        yield " ".join(sorted(info.name for info in turn.tools))
        return
    arguments = {key: int(value) if value.isdigit() else value
                 for key, _, value in (word.partition("=") for word in words[1:])}
    result = await turn.invoke(words[0], arguments)
    yield f"{words[0]} -> {result['summary']}"


async def echo_or_wait(text: str, turn: Any):
    """Echoes the text; one starting with "wait" says so, then works until cancelled."""
    import asyncio

    if text.startswith("wait"):
        yield "waiting;"
        await asyncio.sleep(60)
    yield text


async def recall(text: str, turn: Any):
    """Says what the user said earlier in the session: the user's messages in the turn's
    history tier (the session's conversation, a fork's parent's included)."""
    tier = next((t for t in turn.context.get("tiers") or () if t.get("name") == "history"), {})
    said = [str(item.get("content")) for item in tier.get("items", ())
            if item.get("role") == "user" and item.get("key") != turn.message.message_id]
    yield "recalls: " + " | ".join(said)


class Gauge:
    """Counts the turns it answers at once (``most``) and in all (``done``); each takes 0.3 s."""

    name = "python/gauge"

    def reset(self) -> None:
        self.running = self.most = self.done = 0

    async def respond(self, turn: Any):
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(0.3)
            yield "counted"
        finally:
            self.running -= 1
            self.done += 1


gauge = Gauge()
gauge.reset()
