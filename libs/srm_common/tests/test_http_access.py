"""Who may change things over HTTP: tokens files (and garbage in them), principals,
delegation, the Host and Origin checks. Pure; no server."""

from __future__ import annotations

import pytest
from srm_common.errors import ConfigError
from srm_common.http_access import (
    AccessPolicy,
    Principal,
    Refusal,
    authenticate,
    bearer,
    check_host,
    check_origin,
    host_of,
    parse_tokens,
    token_hash,
)

ALICE = "alice-token-0123456789abcdef"
GATEWAY = "gateway-token-0123456789abcdef"
FILE = f"""\
# principal  token
alice        {token_hash(ALICE)}
api-gateway  {GATEWAY}
"""


def _policy(**kwargs: object) -> AccessPolicy:
    return AccessPolicy(parse_tokens(FILE, source="tokens"), **kwargs)  # type: ignore[arg-type]


def _auth(policy: AccessPolicy, token: str | None = None, cert: str | None = None, **more: str):
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return authenticate(policy, {**headers, **more}, cert)


def test_a_token_names_its_principal_whether_stored_hashed_or_plain() -> None:
    tokens = parse_tokens(FILE, source="tokens")
    assert tokens.principal(ALICE) == "alice"
    assert tokens.principal(GATEWAY) == "api-gateway"
    assert tokens.principal(ALICE + "x") is None
    assert tokens.principal("") is None
    assert len(tokens) == 2


def test_the_hash_in_the_file_is_not_a_token() -> None:
    """The file holds only what cannot be presented: its own text is no one's token."""
    tokens = parse_tokens(FILE, source="tokens")
    assert tokens.principal(token_hash(ALICE)) is None
    assert tokens.principal(token_hash(ALICE).removeprefix("sha256:")) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("alice\n", "line 1 has 1 fields"),
        ("alice a b\n", "line 1 has 3 fields"),
        ("# c\n\nal ice!x sha256:" + "0" * 64 + "\n", "line 3 has 3 fields"),
        ("ali$ce " + "t" * 20 + "\n", "principal 'ali$ce'"),
        ("alice short\n", "the token is 5 characters"),
        ("alice sha256:abc\n", "needs 64 hex digits"),
        (f"a {ALICE}\nb {token_hash(ALICE)}\n", "line 2 (b) has the same token as line 1"),
        ("\x00\x01garbage\x02 \x03\n", "principal"),
    ],
)
def test_a_bad_line_is_one_error_naming_the_line_and_never_the_token(
    text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as error:
        parse_tokens(text, source="/etc/srm/tokens")
    said = str(error.value)
    assert message in said and "\n" not in said, said
    assert "/etc/srm/tokens" in said
    assert ALICE not in said and "short" not in said.split(":")[-1]


def test_an_empty_file_accepts_no_one() -> None:
    tokens = parse_tokens("# nobody yet\n\n", source="tokens")
    refused = _auth(AccessPolicy(tokens), ALICE)
    assert isinstance(refused, Refusal) and refused.status == 401
    assert "no tokens file" in refused.error


def test_bearer_parsing() -> None:
    assert bearer(f"Bearer {ALICE}") == ALICE
    assert bearer(f"bearer   {ALICE} ") == ALICE
    assert bearer(f"Basic {ALICE}") is None
    assert bearer("Bearer ") is None
    assert bearer(None) is None


def test_a_principal_from_a_token_or_a_certificate_and_how_to_authenticate_otherwise() -> None:
    policy = _policy(client_certificates=True)
    assert _auth(policy, ALICE) == Principal("alice")
    assert _auth(policy, cert="srm-client") == Principal("srm-client")
    # A wrong token is refused even with a certificate: a typo never passes unnoticed.
    wrong = _auth(policy, "wrong-token-0123456789", cert="srm-client")
    assert isinstance(wrong, Refusal) and wrong.status == 401
    nothing = _auth(policy)
    assert isinstance(nothing, Refusal) and nothing.status == 401
    assert "Authorization: Bearer" in nothing.error and "client certificate" in nothing.error


def test_only_a_delegator_may_act_on_behalf_of_someone() -> None:
    policy = _policy()
    relayed = _auth(policy, GATEWAY, **{"x-srm-on-behalf-of": "alice"})
    assert relayed == Principal("alice", via="api-gateway")
    assert str(relayed) == "alice via api-gateway"
    claimed = _auth(policy, ALICE, **{"x-srm-on-behalf-of": "root"})
    assert isinstance(claimed, Refusal) and claimed.status == 403
    garbage = _auth(policy, GATEWAY, **{"x-srm-on-behalf-of": "a b\nc"})
    assert isinstance(garbage, Refusal) and garbage.status == 400
    # driver:* delegates by default (a resume asked on a driver), others by configuration.
    assert policy.may_delegate("driver:d7") and not policy.may_delegate("drivers")
    assert _policy(delegators=("ops-*",)).may_delegate("ops-bot")


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1:8080", True),
        ("[::1]:8080", True),
        ("10.1.2.3", True),
        ("localhost:8080", True),
        ("LOCALHOST", True),
        ("srm-gateway.srm.svc:8080", True),  # configured
        ("attacker.example:8080", False),  # DNS rebinding: the page's own name
        ("localhost.attacker.example", False),
        ("", False),
        (None, False),
    ],
)
def test_the_host_check(host: str | None, allowed: bool) -> None:
    policy = AccessPolicy().with_hosts(["srm-gateway.srm.svc", " "])
    refused = check_host(policy, host)
    assert (refused is None) == allowed, refused
    if refused is not None:
        assert refused.status in (400, 421) and "\n" not in refused.error


def test_any_host_when_asked() -> None:
    assert check_host(AccessPolicy().with_hosts(["*"]), "anything.example") is None


def test_host_of() -> None:
    assert host_of("Example.COM:80") == "example.com"
    assert host_of("[::1]:8080") == "::1"
    assert host_of("::1") == "::1"
    assert host_of("http://a.b:1/x") == "a.b"


@pytest.mark.parametrize(
    ("origin", "host", "refused"),
    [
        (None, "localhost:8080", False),  # curl, srm-control, the services
        ("http://localhost:8080", "localhost:8080", False),  # the dashboard itself
        ("http://evil.example", "localhost:8080", True),
        ("http://localhost:3000", "localhost:8080", True),  # another origin on the host
        ("null", "localhost:8080", True),  # sandboxed frames, file:// pages
        ("garbage", "localhost:8080", True),
    ],
)
def test_the_origin_check(origin: str | None, host: str, refused: bool) -> None:
    answer = check_origin(origin, host)
    assert (answer is not None) == refused
    if answer is not None:
        assert answer.status == 403


def test_tokens_and_token_files_that_cannot_be_used_are_one_line(tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    from srm_common.adapters.http_auth import read_tokens
    from srm_common.adapters.http_client import read_token

    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    for read in (read_tokens, read_token):
        for path, message in ((tmp_path / "missing", "No such file"), (binary, "not text")):
            with pytest.raises(ConfigError) as error:
                read(path)
            assert message in str(error.value) and str(path) in str(error.value)
    empty = tmp_path / "empty.token"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="holds no token of at least 16"):
        read_token(empty)
    shared = tmp_path / "tokens"
    shared.write_text(FILE)
    shared.chmod(0o644)
    assert len(read_tokens(shared)) == 2
    assert "can be read by others; chmod 600" in caplog.text
