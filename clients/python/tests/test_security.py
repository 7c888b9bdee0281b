"""Tokens and TLS against the example server."""

import pytest

import wirecall

from conftest import FANLY, TOKEN


def test_the_right_token_is_let_in(token_server, codec):
    with wirecall.connect(token_server.address, codecs=[codec], token=TOKEN) as client:
        assert client.UserService.get_user_id(name="fanly") == 5


def test_a_wrong_token_raises_authentication_failed(token_server):
    with pytest.raises(wirecall.AuthenticationFailed) as refused:
        wirecall.connect(token_server.address, token="wrong")
    assert refused.value.status == 5
    assert refused.value.offered == ("msgpack", "json")
    # A token server reveals nothing before the token is checked.
    assert refused.value.supported == ()
    assert isinstance(refused.value, wirecall.NegotiationError)


def test_a_missing_token_raises_authentication_failed(token_server):
    with pytest.raises(wirecall.AuthenticationFailed):
        wirecall.connect(token_server.address)


def test_tls_with_the_ca_and_server_name(tls_server, ca_file, codec):
    host_port = tls_server.address
    with wirecall.connect(host_port, codecs=[codec], tls_ca=ca_file, server_name="localhost", token=TOKEN) as client:
        assert client.codec == codec
        assert client.UserService.get_user(user=FANLY)  # a round trip inside TLS
        assert client.UserService.get_user_id(name="tls") == 3


def test_tls_with_an_untrusted_ca_fails(tls_server, tmp_path):
    import trustme

    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    with pytest.raises(wirecall.TlsError):
        wirecall.connect(tls_server.address, tls_ca=str(other_ca), server_name="localhost", token=TOKEN)


def test_tls_with_a_wrong_server_name_fails(tls_server, ca_file):
    with pytest.raises(wirecall.TlsError):
        wirecall.connect(tls_server.address, tls_ca=ca_file, server_name="elsewhere", token=TOKEN)


def test_a_plain_client_at_a_tls_server_is_told_so(tls_server):
    with pytest.raises(wirecall.NotWirecall, match="speaks TLS"):
        wirecall.connect(tls_server.address, token=TOKEN)


def test_a_tls_client_at_a_plain_server_fails_in_the_handshake(server):
    with pytest.raises(wirecall.TlsError):
        wirecall.connect(server.address, tls=True, server_name="localhost")
