"""The A2A specification's ``a2a.proto`` (v1.0.0), vendored, and its compiled form
(``scripts/gen_grpc.py``); ``pool.py`` builds the gRPC binding's messages from it."""
