"""The A2A gRPC binding (the optional ``grpc`` extra), served next to HTTP: A2A 1.0's
service and 0.3's, on one port."""
