"""Keep Kafka's secrets out of the warehouse: a keyed fingerprint (HMAC-SHA256) instead of each secret.

A fingerprint tells whether a secret changed between two snapshots (same key, same secret, same
fingerprint) without revealing it: without the key, it cannot even be checked against a guessed
password. With the brokers' ``password.encoder.secret`` (``decoder``), an encoded broker password is decoded
first and its clear text fingerprinted (``contract.secrets.DECODED_PREFIX``): comparable with the KRaft side,
where the migration stores it decoded; one that does not decode is fingerprinted as it is. The key is per
warehouse, ``<warehouse>/.keys/fingerprint.key``, created on first use with mode 0600 (on object stores, protect
the bucket prefix instead). Which data is secret is defined in ``contract.secrets``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from typing import Any

from kafka_zk_audit.contract.secrets import (
    DECODED_PREFIX,
    ENCRYPTED_VALUE,
    FINGERPRINT_PREFIX,
    FINGERPRINTED_DATA,
    FINGERPRINTED_VALUES,
    SECRET_DATA_PATHS,
    SECRET_PATHS,
    is_secret_config,
)
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.password_encoder import PasswordDecodeError, PasswordDecoder

_ENCODED = re.compile(ENCRYPTED_VALUE)
KEY_DIR = ".keys"
KEY_FILE = "fingerprint.key"
KEY_BYTES = 32


def key_path(warehouse: Warehouse) -> str:
    return f"{warehouse.root}/{KEY_DIR}/{KEY_FILE}"


def warehouse_key(warehouse: Warehouse) -> bytes:
    """The warehouse's fingerprint key, created (random, 0600) the first time it is asked for."""
    url = key_path(warehouse)
    if "://" not in warehouse.root:
        os.makedirs(os.path.dirname(url), mode=0o700, exist_ok=True)
        try:
            fd = os.open(url, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_hex(KEY_BYTES) + "\n")
        with open(url) as handle:
            return bytes.fromhex(handle.read().strip())
    fs, path = warehouse.fs, warehouse.fs_path(url)
    if not fs.exists(path):
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        with fs.open(path, "w") as handle:
            handle.write(secrets.token_hex(KEY_BYTES) + "\n")
    with fs.open(path, "r") as handle:
        return bytes.fromhex(handle.read().strip())


def key_id(key: bytes) -> str:
    """A short public name of a key (snapshots with the same key id have comparable fingerprints)."""
    return hashlib.sha256(b"kafka-zk-audit key id:" + key).hexdigest()[:16]


class Fingerprinter:
    """Replaces secret data by fingerprints; ``scrub`` is called for every znode the snapshot records."""

    def __init__(self, key: bytes, decoder: PasswordDecoder | None = None) -> None:
        self._key = key
        self.key_id = key_id(key)
        self._decoder = decoder
        self.decoded = 0  # encoded broker passwords decoded and fingerprinted as clear text
        self.undecodable = 0  # encoded broker passwords the decoder could not decode

    def __repr__(self) -> str:
        return f"Fingerprinter(key_id={self.key_id})"

    def fingerprint(self, value: bytes) -> str:
        return FINGERPRINT_PREFIX + hmac.new(self._key, value, hashlib.sha256).hexdigest()

    def scrub(self, path: str, data: bytes | None) -> tuple[bytes | None, str | None]:
        """``(data to record, fingerprinted)``: ``None`` when nothing was replaced, else ``values`` or ``data``."""
        if not data or not path.startswith(SECRET_PATHS):
            return data, None
        if path.startswith(SECRET_DATA_PATHS):
            return self.fingerprint(data).encode(), FINGERPRINTED_DATA
        return self._scrub_config(data, path.startswith("/config/brokers/"))

    def _secret_fingerprint(self, raw: str, broker: bool) -> str:
        """A secret config value's fingerprint: of its clear text when it is a broker password the decoder decodes."""
        if self._decoder is not None and broker and _ENCODED.search(raw):
            try:
                clear = self._decoder.decode(raw)
            except PasswordDecodeError:
                self.undecodable += 1
            else:
                self.decoded += 1
                return DECODED_PREFIX + self.fingerprint(clear.encode()).removeprefix(FINGERPRINT_PREFIX)
        return self.fingerprint(raw.encode())

    def _scrub_config(self, data: bytes, broker: bool = False) -> tuple[bytes, str | None]:
        """A config document ``{"version":1,"config":{…}}`` with each secret value fingerprinted.

        Anything that is not such a document is fingerprinted whole: it cannot be told apart from a secret.
        """
        try:
            document: Any = json.loads(data)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested beyond the parser
            return self.fingerprint(data).encode(), FINGERPRINTED_DATA
        config = document.get("config") if isinstance(document, dict) else None
        if not isinstance(config, dict):
            return self.fingerprint(data).encode(), FINGERPRINTED_DATA
        secret_keys = [key for key, value in config.items() if is_secret_config(key, value)]
        if not secret_keys:
            return data, None
        for key in secret_keys:
            value = config[key]
            raw = value if isinstance(value, str) else json.dumps(value)
            config[key] = self._secret_fingerprint(raw, broker)
        return json.dumps(document, separators=(",", ":")).encode(), FINGERPRINTED_VALUES
