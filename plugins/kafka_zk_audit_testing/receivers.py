"""Real alert receivers on 127.0.0.1: an SMTP server (aiosmtpd) and an HTTP server answering as a webhook, Slack,
PagerDuty's Events API and Opsgenie's Alert API do."""

from __future__ import annotations

import email
import email.policy
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from kafka_zk_audit_testing.zk_server import free_port


class CollectingHandler:
    """aiosmtpd handler keeping every message it receives."""

    def __init__(self) -> None:
        self.envelopes: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd API
        self.envelopes.append(envelope)
        return "250 Message accepted"

    def messages(self) -> list[email.message.EmailMessage]:
        return self.messages_of(self.envelopes)

    @staticmethod
    def messages_of(envelopes: list[Any]) -> list[email.message.EmailMessage]:
        return [email.message_from_bytes(e.content, policy=email.policy.default) for e in envelopes]


def accept_only(password: str):
    """An aiosmtpd authenticator accepting LOGIN/PLAIN with exactly this password."""

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
        ok = isinstance(auth_data, LoginPassword) and auth_data.password == password.encode()
        return AuthResult(success=ok, handled=False)

    return authenticator


@contextmanager
def smtp_receiver(password: str) -> Iterator[tuple[int, CollectingHandler]]:
    """A real SMTP server on 127.0.0.1 and a free port, requiring AUTH with ``password`` (no TLS)."""
    handler = CollectingHandler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port, authenticator=accept_only(password),
                            auth_require_tls=False)
    controller.start()
    try:
        yield port, handler
    finally:
        controller.stop()


@dataclass
class WebhookReceiver:
    port: int
    posts: list[dict[str, Any]]
    ca_file: str | None = None  # with TLS: the self-signed certificate to trust

    def url(self, path: str) -> str:
        return f"{'https' if self.ca_file else 'http'}://127.0.0.1:{self.port}{path}"


def self_signed_certificate(folder: Path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 (and localhost) signed by its own key, valid for a day: (cert file, key file)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = folder / "receiver.crt", folder / "receiver.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_file), str(key_file)


@contextmanager
def webhook_receiver(tls_dir: Path | None = None) -> Iterator[WebhookReceiver]:
    """A real HTTP server on 127.0.0.1 that answers as the alert services do: POSTs under /fail answer 500,
    under /reject 400; under /pagerduty, PagerDuty's Events API (202, ``{"status": "success", "dedup_key": …}``);
    under /opsgenie, Opsgenie's Alert API (202, ``{"result": …, "took": …, "requestId": …}``); any other 200 ``ok``
    (a webhook, Slack). Each POST is kept with its path (query included), headers and JSON body. With ``tls_dir``,
    it serves HTTPS with a self-signed certificate written there (the receiver's ``ca_file``), for clients that take
    only HTTPS URLs."""
    posts: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server API
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            payload = json.loads(body) if body else None
            posts.append({"path": self.path, "headers": dict(self.headers), "json": payload})
            if self.path.startswith("/fail"):
                self._answer(500, b"receiver broke", "text/plain")
            elif self.path.startswith("/reject"):
                self._answer(400, b'{"message": "invalid key"}', "application/json")
            elif self.path.startswith("/pagerduty"):
                answer = {"status": "success", "message": "Event processed", "dedup_key": payload.get("dedup_key")}
                self._answer(202, json.dumps(answer).encode(), "application/json")
            elif self.path.startswith("/opsgenie"):
                answer = {"result": "Request will be processed", "took": 0.01, "requestId": f"req-{len(posts)}"}
                self._answer(202, json.dumps(answer).encode(), "application/json")
            else:
                self._answer(200, b"ok", "text/plain")

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ca_file = None
    if tls_dir is not None:
        ca_file, key_file = self_signed_certificate(tls_dir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(ca_file, key_file)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield WebhookReceiver(server.server_address[1], posts, ca_file)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
