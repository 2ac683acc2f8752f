"""The A2A 1.0 gRPC binding (the optional ``grpc`` extra), served next to HTTP."""
