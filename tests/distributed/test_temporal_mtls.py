"""Mutual TLS to Temporal: `[runtime] temporal_tls_ca / _cert / _key / _domain`.

A TLS front on 127.0.0.1 (Python's ssl, requiring a client certificate signed by the test's
CA, ALPN h2) forwards to the dev server, as a cluster's TLS endpoint would: a run goes
through it with the configured certificate, and a client without one, or with one of
another CA, is refused at start with the address named. Certificates are made here.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from harness import Agent, Harness, tool
from harness.errors import ConfigError
from harness.runtime.settings import load_settings
from harness.testing import ScriptedModel, call, reply


@dataclass
class Issued:
    cert: bytes
    key: bytes


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def authority(common: str) -> tuple[Issued, ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(_name(common))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return Issued(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)), key, cert


def leaf(
    ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, common: str, *, server: bool
) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
    )
    if server:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return Issued(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


@dataclass
class Front:
    """The TLS endpoint: who connected, by their certificate's common name."""

    port: int = 0
    clients: list[str] = field(default_factory=list)


@pytest.fixture
async def front(tmp_path: Path, temporal_address: str) -> AsyncIterator[Front]:
    ca, ca_key, ca_cert = authority("harness test CA")
    server = leaf(ca_key, ca_cert, "temporal.test", server=True)
    client = leaf(ca_key, ca_cert, "harness-worker", server=False)
    other, other_key, other_cert = authority("another CA")
    stranger = leaf(other_key, other_cert, "stranger", server=False)
    files = {
        "ca.pem": ca.cert,
        "server.pem": server.cert,
        "server.key": server.key,
        "client.pem": client.cert,
        "client.key": client.key,
        "stranger.pem": stranger.cert,
        "stranger.key": stranger.key,
        "other-ca.pem": other.cert,
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.pem", tmp_path / "server.key")
    context.load_verify_locations(tmp_path / "ca.pem")
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])
    host, port = temporal_address.rsplit(":", 1)
    seen = Front()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peercert") or {}
        subject = dict(item for part in peer.get("subject", ()) for item in part)
        seen.clients.append(str(subject.get("commonName")))
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    listening = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    seen.port = listening.sockets[0].getsockname()[1]
    async with listening:
        yield seen
        listening.close()


@tool(side_effects="none")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def adder() -> Agent:
    replies = [reply(None, call("add", {"a": 2, "b": 3}, id="c1")), reply("5")]
    return Agent(name="adder", model=ScriptedModel(replies), tools=[add])


def configure(home: Path, port: int, queue: str, *tls: str) -> None:
    lines = [
        "[runtime]",
        'backend = "temporal"',
        f'temporal_address = "127.0.0.1:{port}"',
        f'task_queue = "{queue}"',
        "temporal_tls = true",
        *tls,
    ]
    (home / "harness.toml").write_text("\n".join(lines) + "\n")


async def test_a_run_goes_through_mutual_tls_with_the_configured_certificate(
    tmp_path: Path, front: Front, task_queue: str
) -> None:
    configure(
        tmp_path,
        front.port,
        task_queue,
        'temporal_tls_ca = "ca.pem"',
        'temporal_tls_cert = "client.pem"',
        'temporal_tls_key = "client.key"',
        'temporal_tls_domain = "localhost"',
    )
    settings = load_settings(tmp_path)
    assert settings.runtime.temporal_tls_key == str(tmp_path / "client.key")  # from the file
    async with Harness(settings, store=str(tmp_path / "h.db")) as h:
        result = await h.wait(await h.submit(adder(), "add"), timeout=60)
    assert result.output == "5"
    assert set(front.clients) == {"harness-worker"}  # it connected, with its certificate


@pytest.mark.parametrize(
    "tls",
    [
        ('temporal_tls_ca = "ca.pem"', 'temporal_tls_domain = "localhost"'),  # no client cert
        (  # a certificate the front does not trust
            'temporal_tls_ca = "ca.pem"',
            'temporal_tls_cert = "stranger.pem"',
            'temporal_tls_key = "stranger.key"',
            'temporal_tls_domain = "localhost"',
        ),
        (  # a server it does not trust
            'temporal_tls_ca = "other-ca.pem"',
            'temporal_tls_cert = "client.pem"',
            'temporal_tls_key = "client.key"',
            'temporal_tls_domain = "localhost"',
        ),
    ],
    ids=["no-client-certificate", "another-ca-s-client", "untrusted-server"],
)
async def test_a_refused_handshake_stops_the_start_naming_the_address(
    tmp_path: Path, front: Front, task_queue: str, tls: tuple[str, ...]
) -> None:
    configure(tmp_path, front.port, task_queue, *tls)
    with pytest.raises(ConfigError, match=rf"cannot reach Temporal at 127\.0\.0\.1:{front.port}"):
        async with Harness(load_settings(tmp_path), store=str(tmp_path / "h.db")):
            pass
    assert "harness-worker" not in front.clients


def test_tls_files_are_read_at_load_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "plain.txt").write_text("not a certificate")
    for given, says in (
        ('temporal_tls_ca = "missing.pem"', "key 'runtime.temporal_tls_ca': cannot read"),
        ('temporal_tls_ca = "plain.txt"', "plain.txt is not a PEM file"),
    ):
        configure(tmp_path, 7233, "q", given)
        with pytest.raises(ConfigError, match=says):
            load_settings(tmp_path)
