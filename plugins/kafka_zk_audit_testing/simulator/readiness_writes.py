"""Znodes written the way Kafka's brokers and tools write them, for the readiness plants: a config with its change
notification, sanitized entity names, encrypted dynamic passwords, and broker ids no one uses yet."""

from __future__ import annotations

import base64
import json
import secrets
import urllib.parse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_zk_audit_testing.simulator.cluster import Simulator

RESERVED_BROKER_MAX_ID = 1000  # KafkaConfig reserved.broker.max.id default
FIRST_PLANTED_BROKER_ID = 900
USED_IDS = "readiness_broker_ids"


def planted_broker_id(sim: Simulator) -> int:
    """An id at most reserved.broker.max.id that no broker, replica or earlier plant of the cluster uses."""
    used = sim.plant_notes.setdefault(USED_IDS, set())
    taken = used | set(sim.broker_sessions) | set(sim.model.broker_ids)
    broker_id = next(i for i in range(FIRST_PLANTED_BROKER_ID, RESERVED_BROKER_MAX_ID + 1) if i not in taken)
    used.add(broker_id)
    return broker_id


def create_znode(sim: Simulator, path: str, data: bytes | None) -> None:
    sim.admin.ensure_path(path.rsplit("/", 1)[0] or "/")
    sim.admin.create(path, data)
    sim.counts.creates += 1


def write_znode(sim: Simulator, path: str, data: bytes) -> None:
    """Set ``path``'s data, or create it."""
    if sim.admin.exists(path):
        sim.admin.set(path, data)
        sim.counts.sets += 1
    else:
        create_znode(sim, path, data)


def config_change(sim: Simulator, entity_type: str, entity_name: str) -> None:
    """The /config/changes notification every AdminZkClient config write leaves."""
    with sim.writer(sim.admin, "config change") as writer:
        writer.create("/config/changes/config_change_", sim.encoder.config_change(entity_type, entity_name),
                      sequence=True)


def read_json(sim: Simulator, path: str) -> dict[str, Any]:
    data, _ = sim.admin.get(path)
    return json.loads(data) if data else {}


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encoding with ``%20`` for spaces and ``%2A`` for ``*``."""
    return urllib.parse.quote(name, safe="-_.").replace("~", "%7E")


def encrypted_password(password: str) -> str:
    """A dynamic broker password as ``EncryptingPasswordEncoder.encode`` stores it (default algorithms,
    a 256-byte salt, AES/CBC with its IV); the ciphertext is random bytes of the right length."""

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    ciphertext = secrets.token_bytes(16 * (len(password) // 16 + 1))
    fields = {
        "keyFactoryAlgorithm": "PBKDF2WithHmacSHA512", "cipherAlgorithm": "AES/CBC/PKCS5Padding",
        "keyLength": "128", "salt": b64(secrets.token_bytes(256)), "iterations": "4096",
        "encryptedPassword": b64(ciphertext), "passwordLength": str(len(password)),
        "initializationVector": b64(secrets.token_bytes(16)),
    }
    return ",".join(f"{key}:{value}" for key, value in fields.items())

