"""`agents send "message"`: one message to the agent (A2A 1.0 `SendStreamingMessage`),
its reply printed as it streams in."""

from __future__ import annotations

import argparse
from typing import Any

from cleveragents.cli.backend import CallError
from cleveragents.cli.output import Output

STREAM_METHOD = "SendStreamingMessage"
FAILED = {"TASK_STATE_FAILED", "TASK_STATE_REJECTED", "TASK_STATE_CANCELED"}
WAITING = {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"}


def _text(parts: Any) -> str:
    return "".join(p["text"] for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str))


def _message(args: argparse.Namespace) -> dict[str, Any]:
    from cleveragents.a2a.codecs import CLI_CLIENT, CLIENT_KEY
    from cleveragents.ids import new_id

    # The metadata tells the agent it speaks to the command line (its hints name `agents` commands).
    message: dict[str, Any] = {"role": "ROLE_USER", "messageId": new_id(), "parts": [{"text": args.text}],
                               "metadata": {CLIENT_KEY: CLI_CLIENT}}
    if args.context:
        message["contextId"] = args.context
    if args.task:
        message["taskId"] = args.task
    return message


class _Reply:
    """Follows the stream: prints reply text as it comes, remembers the task's state."""

    def __init__(self, out: Output):
        self.out = out
        self.task_id: str | None = None
        self.state: str | None = None
        self.status_text = ""
        self.ends_with_newline = True

    def feed(self, item: dict[str, Any]) -> None:
        if self.out.as_json:
            self.out.json(item, indent=None)
        if task := item.get("task"):
            self.task_id = task.get("id", self.task_id)
            self._status(task.get("status") or {})
        elif update := item.get("statusUpdate"):
            self.task_id = update.get("taskId", self.task_id)
            self._status(update.get("status") or {})
        elif update := item.get("artifactUpdate"):
            self._write(_text((update.get("artifact") or {}).get("parts")))
        elif message := item.get("message"):
            self._write(_text(message.get("parts")))

    def _status(self, status: dict[str, Any]) -> None:
        self.state = status.get("state", self.state)
        self.status_text = _text((status.get("message") or {}).get("parts")) or self.status_text

    def _write(self, text: str) -> None:
        if text and not self.out.as_json:
            self.out.stdout.write(text)
            self.out.stdout.flush()
            self.ends_with_newline = text.endswith("\n")


async def send(backend: Any, args: argparse.Namespace, out: Output) -> int | None:
    reply = _Reply(out)
    async for item in backend.stream(STREAM_METHOD, {"message": _message(args)}):
        reply.feed(item)
    if not reply.ends_with_newline:
        out.stdout.write("\n")
    state = (reply.state or "").removeprefix("TASK_STATE_").lower().replace("_", "-")
    if reply.state in FAILED:
        raise CallError("task-failed", f"task {reply.task_id} {state}: {reply.status_text or 'no reason given'}")
    if reply.state in WAITING and not out.as_json:
        out.stderr.write(f"agents: task {reply.task_id} is {state}: {reply.status_text} "
                         f"(answer with: agents send --task {reply.task_id} ...)\n")
    return None


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    p = commands.add_parser("send", parents=[common], help="send a message to the agent; stream its reply",
                            description="Send a message to the agent and print its reply as it streams in "
                                        "(with --json: every stream item, one JSON object a line).")
    p.add_argument("text", metavar="MESSAGE")
    p.add_argument("--context", metavar="CONTEXT_ID", help="continue this conversation")
    p.add_argument("--task", metavar="TASK_ID", help="answer this task (one that needs input)")
    p.set_defaults(handler=send)
