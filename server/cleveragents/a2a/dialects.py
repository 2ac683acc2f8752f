"""The dialects a method can belong to. Kept import-free: the method table and the
stdio server's startup path read it."""

A2A_V1 = "a2a/1.0"
A2A_V03 = "a2a/0.3"
EXTENSION = "cleveragents"
LEGACY = "legacy"

STANDARD = frozenset({A2A_V1, A2A_V03})
ALL = (A2A_V1, A2A_V03, EXTENSION, LEGACY)

# The A2A protocol version each standard dialect speaks.
PROTOCOL_VERSION = {A2A_V1: "1.0", A2A_V03: "0.3"}
