"""The layer rules: each layer imports only the layers below it (docs/architecture.md)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "cleveragents"
# Cross-cutting: ids and clocks, settings, the spans every layer opens, and what every
# outbound HTTP client shares (the TLS context, clients kept between calls).
SHARED = {"cleveragents._version", "cleveragents.ids", "cleveragents.config", "cleveragents.tracing",
          "cleveragents.http_clients"}
ALLOWED = {
    "domain": {"domain"},
    "infra": {"infra", "domain"},
    "app": {"app", "domain"},
    "a2a": {"a2a", "app", "domain"},
    # Transports reach the services only through the facade; the composition root
    # is how they get one.
    "transports": {"transports", "a2a", "container"},
    "cli": {"cli", "transports", "a2a", "container"},
    # The API for publishing agents composes everything, like the composition root.
    "publish": {"publish", "a2a", "app", "domain", "infra", "transports", "container"},
    # Names for UI code (A2UI parts), from the publishing API.
    "ui": {"ui", "publish", "domain"},
}


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {name for name in found if name.startswith("cleveragents")}


def test_every_layer_imports_only_what_is_below_it():
    breaches = []
    for layer, allowed in ALLOWED.items():
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for name in imports_of(path):
                parts = name.split(".")
                if name in SHARED or name == "cleveragents" or (len(parts) > 1 and parts[1] in allowed):
                    continue
                breaches.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert breaches == []
