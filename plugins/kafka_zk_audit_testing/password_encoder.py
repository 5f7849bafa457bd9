"""Kafka's ``EncryptingPasswordEncoder.encode`` for the tests: a dynamic broker password as ZooKeeper-mode brokers
store it, encrypted with their ``password.encoder.secret``.

Written from Kafka's encoder (apache/kafka core/src/main/scala/kafka/utils/PasswordEncoder.scala), with the
``cryptography`` primitives, not with the product's decoder: a 256-byte random salt, PBKDF2 (HMAC-SHA512 by default,
4096 iterations, a 128-bit key) of the secret, AES/CBC/PKCS5Padding with a random IV, and the map string in Kafka's
field order. ``salt`` and ``iv`` may be fixed for a known vector.
"""

from __future__ import annotations

import base64
import os

HASHES = {"PBKDF2WithHmacSHA512": "SHA512", "PBKDF2WithHmacSHA1": "SHA1", "PBKDF2WithHmacSHA256": "SHA256"}


def encode_password(password: str, secret: str, *, key_factory: str = "PBKDF2WithHmacSHA512",
                    key_length: int = 128, iterations: int = 4096, salt: bytes | None = None,
                    iv: bytes | None = None) -> str:
    """``password`` encoded as Kafka's brokers store it in ZooKeeper."""
    from cryptography.hazmat.primitives import hashes, padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

    salt = os.urandom(256) if salt is None else salt
    iv = os.urandom(16) if iv is None else iv
    key = PBKDF2HMAC(getattr(hashes, HASHES[key_factory])(), key_length // 8, salt, iterations).derive(
        secret.encode("utf-8"))
    padder = padding.PKCS7(128).padder()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    ciphertext = encryptor.update(padder.update(password.encode("utf-8")) + padder.finalize()) + encryptor.finalize()
    fields = {"keyFactoryAlgorithm": key_factory, "cipherAlgorithm": "AES/CBC/PKCS5Padding",
              "keyLength": str(key_length), "salt": base64.b64encode(salt).decode(), "iterations": str(iterations),
              "encryptedPassword": base64.b64encode(ciphertext).decode(), "passwordLength": str(len(password)),
              "initializationVector": base64.b64encode(iv).decode()}
    return ",".join(f"{key}:{value}" for key, value in fields.items())


def decode_password(encoded: str, secret: str) -> str:
    """The clear text a controller with ``secret`` decodes (the test encoder's own inverse of ``encode_password``,
    for the KRaft side it writes; AES/CBC only)."""
    from cryptography.hazmat.primitives import hashes, padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

    fields = dict(part.rsplit(":", 1) for part in encoded.split(","))
    key = PBKDF2HMAC(getattr(hashes, HASHES[fields["keyFactoryAlgorithm"]])(), int(fields["keyLength"]) // 8,
                     base64.b64decode(fields["salt"]), int(fields["iterations"])).derive(secret.encode("utf-8"))
    decryptor = Cipher(algorithms.AES(key), modes.CBC(base64.b64decode(fields["initializationVector"]))).decryptor()
    padded = decryptor.update(base64.b64decode(fields["encryptedPassword"])) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    return (unpadder.update(padded) + unpadder.finalize()).decode("utf-8")
