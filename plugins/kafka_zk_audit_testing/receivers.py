"""Real alert receivers on 127.0.0.1: an SMTP server (aiosmtpd) and an HTTP webhook server."""

from __future__ import annotations

import email
import email.policy
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextmanager
def webhook_receiver() -> Iterator[WebhookReceiver]:
    """A real HTTP server on 127.0.0.1: POSTs under /hook answer 200, under /fail 500."""
    posts: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server API
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            posts.append({"path": self.path, "headers": dict(self.headers), "json": json.loads(body)})
            status = 500 if self.path.startswith("/fail") else 200
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"ok" if status == 200 else b"receiver broke")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield WebhookReceiver(server.server_address[1], posts)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
