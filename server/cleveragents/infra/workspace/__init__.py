"""A plan's workspace: the overlay it writes to, the blobs behind it, the diff, and
the journaled apply and rollback."""
