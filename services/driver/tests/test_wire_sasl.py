"""SASL logins of the copy slot's protocol layer (:mod:`srm_driver.copier.wire.sasl`):
SCRAM against RFC 7677's worked example (SCRAM-SHA-256), a server that does not know the
password refused, PLAIN's token, and the two requests against golden bytes. On real
brokers: tests/integration/test_batch_pass_through.py."""

from __future__ import annotations

import struct

import pytest
from srm_driver.copier.wire import sasl

# RFC 7677, section 3: user "user", password "pencil"
NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
USER = sasl.Sasl("SCRAM-SHA-256", "user", "pencil")


def test_scram_sha_256_follows_the_rfc_worked_example() -> None:
    scram = sasl.Scram(USER, nonce=NONCE)
    assert scram.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert scram.final(SERVER_FIRST) == CLIENT_FINAL
    scram.verify(SERVER_FINAL)


def test_a_server_that_does_not_know_the_password_is_refused() -> None:
    scram = sasl.Scram(USER, nonce=NONCE)
    scram.final(SERVER_FIRST)
    with pytest.raises(sasl.ScramRefused, match="signature does not hold"):
        scram.verify(b"v=" + b"A" * 44)
    with pytest.raises(sasl.ScramRefused, match="server-first"):
        sasl.Scram(USER, nonce=NONCE).final(b"r=someone-elses-nonce,s=AAAA,i=4096")


def test_user_names_are_escaped_and_mechanisms_checked() -> None:
    scram = sasl.Scram(sasl.Sasl("SCRAM-SHA-512", "a=b,c", "p"), nonce="n")
    assert scram.first() == b"n,,n=a=3Db=2Cc,r=n"
    with pytest.raises(ValueError, match="'GSSAPI': this layer speaks PLAIN, SCRAM-SHA-256"):
        sasl.Sasl("GSSAPI", "u", "p")
    assert "pencil" not in repr(USER)


def test_the_exchange_sends_plains_one_token_and_scrams_two() -> None:
    sent: list[bytes] = []

    def plain(token: bytes) -> bytes:
        sent.append(token)
        return b""

    sasl.exchange(sasl.Sasl("PLAIN", "alice", "secret"), plain)
    assert sent == [b"\0alice\0secret"]
    answers = iter([SERVER_FIRST, b"v=wrong"])
    with pytest.raises(sasl.ScramRefused):
        sasl.exchange(USER, lambda token: next(answers))


def test_handshake_and_authenticate_requests_and_answers() -> None:
    assert sasl.handshake_request("PLAIN") == b"\x00\x05PLAIN"
    raw = b"\x00\x21" + b"\x00\x00\x00\x02" + b"\x00\x05PLAIN" + b"\x00\x0dSCRAM-SHA-512"
    assert sasl.handshake_response(memoryview(raw)) == (33, ["PLAIN", "SCRAM-SHA-512"])
    assert sasl.authenticate_request(b"tok") == b"\x00\x00\x00\x03tok"
    raw = b"\x00\x3a" + b"\x00\x03bad" + b"\x00\x00\x00\x02ok" + struct.pack(">q", 0)
    assert sasl.authenticate_response(memoryview(raw)) == (58, "bad", b"ok")
