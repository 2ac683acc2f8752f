"""How the rules about where the server connects read an address (``domain/addresses.py``)."""

import ipaddress

import pytest

from cleveragents.domain.addresses import literal_address, read_address


@pytest.mark.parametrize("text, address", [
    ("127.0.0.1", "127.0.0.1"),
    ("::ffff:127.0.0.1", "127.0.0.1"),  # IPv4-mapped: the IPv4 address it reaches
    ("::ffff:7f00:1", "127.0.0.1"),
    ("fe80::1%eth0", "fe80::1"),  # the zone names an interface, not another address
    ("::1", "::1"),
])
def test_an_address_is_read_as_the_one_it_reaches(text, address):
    assert read_address(text) == ipaddress.ip_address(address)
    assert literal_address(text) == address


@pytest.mark.parametrize("host", ["localhost", "agent.example", "127.1.1", "", "%eth0"])
def test_a_name_is_no_literal_address(host):
    assert literal_address(host) is None
    with pytest.raises(ValueError):
        read_address(host)
