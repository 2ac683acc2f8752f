from collections.abc import Iterator

import pytest

from tests.security.identities import IDENTITIES, Identity, identity_for


@pytest.fixture(params=IDENTITIES)
def identity(request: pytest.FixtureRequest) -> Iterator[Identity]:
    """Each attack that spawns a server runs as root and as an unprivileged user."""
    yield from identity_for(request.param)
