"""An agent whose card says who provides it, where its documentation is, which media
types it takes and gives, and that it neither streams nor sends push notifications;
an extended-card callback adds a skill for authenticated callers. On stdio it reads
messages of up to 8 MiB."""

import sys

from cleveragents import A2A, Agent, AgentProvider


def add_internal_skill(card: dict) -> None:
    card["skills"].append({"id": "audit", "name": "audit", "description": "Only for callers", "tags": ["ops"]})


def build(**options) -> A2A:
    return A2A(
        agent=Agent(name="Quiet", role="Answers once", handler=lambda text: f"noted: {text}"),
        provider=AgentProvider(organization="Example Org", url="https://example.org"),
        documentation_url="https://example.org/docs/quiet",
        default_input_modes=["text/plain"], default_output_modes=["text/plain", "application/json"],
        streaming=False, push_notifications=False, extended_agent_card_callback=add_internal_skill, **options)


if __name__ == "__main__":
    build().serve_stdio(memory="--memory" in sys.argv, max_message_size=8 * 1024 * 1024)
