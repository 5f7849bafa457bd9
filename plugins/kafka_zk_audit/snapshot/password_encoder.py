"""Kafka's encoded dynamic broker passwords, decoded with the brokers' ``password.encoder.secret``.

ZooKeeper-mode brokers store a dynamic password config (``/config/brokers/<id|<default>>``) as the map string
``EncryptingPasswordEncoder.encode`` writes (apache/kafka core/src/main/scala/kafka/utils/PasswordEncoder.scala,
server-common/src/main/java/org/apache/kafka/security/PasswordEncoder.java from 3.7):
``keyFactoryAlgorithm:…,cipherAlgorithm:…,keyLength:…,salt:<b64>,iterations:…,encryptedPassword:<b64>,
passwordLength:…,initializationVector:<b64>`` (GCM adds ``authenticationTagLength``). The key is PBKDF2 (the map's
key factory: HMAC-SHA512 by default, 4096 iterations, 128 bits) of the secret over the salt; the cipher AES/CBC with
PKCS#5 padding (or AES/GCM). ``decode`` does what ``EncryptingPasswordEncoder.decode`` does, with the checks it
makes (the cipher's padding or tag, then the clear text's length). The secret and the clear text never leave the
process: the snapshot fingerprints the clear text at once (``snapshot.secrets.Fingerprinter``).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

KEY_FACTORIES = {"PBKDF2WithHmacSHA512": "SHA512", "PBKDF2WithHmacSHA256": "SHA256", "PBKDF2WithHmacSHA1": "SHA1"}


class PasswordDecodeError(ValueError):
    """An encoded password that this secret cannot decode (wrong secret, unknown algorithm, damaged text)."""


def parse_encoded(text: str) -> dict[str, str]:
    """``CoreUtils.parseCsvMap``: ``k:v`` pairs split at commas, each at its last colon."""
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, colon, value = part.strip().rpartition(":")
        if not colon:
            raise PasswordDecodeError("not an encoded password: a field without ':'")
        fields[key.strip()] = value.strip()
    return fields


def _b64(fields: dict[str, str], name: str) -> bytes:
    try:
        return base64.b64decode(fields[name], validate=True)
    except (KeyError, binascii.Error) as error:
        raise PasswordDecodeError(f"field {name} missing or not base64") from error


def _key(secret: bytes, fields: dict[str, str]) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

    algorithm = KEY_FACTORIES.get(fields.get("keyFactoryAlgorithm", ""))
    if algorithm is None:
        raise PasswordDecodeError(f"key factory {fields.get('keyFactoryAlgorithm')!r} is not supported")
    try:
        bits, iterations = int(fields["keyLength"]), int(fields["iterations"])
    except (KeyError, ValueError) as error:
        raise PasswordDecodeError("keyLength or iterations missing or not a number") from error
    if bits not in (128, 192, 256) or iterations < 1:
        raise PasswordDecodeError(f"key length {bits} or iterations {iterations} unusable for AES")
    kdf = PBKDF2HMAC(getattr(hashes, algorithm)(), bits // 8, _b64(fields, "salt"), iterations)
    return kdf.derive(secret)


def _decrypt(key: bytes, fields: dict[str, str]) -> bytes:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    cipher, data, iv = fields.get("cipherAlgorithm", ""), _b64(fields, "encryptedPassword"), _b64(
        fields, "initializationVector")
    try:
        if cipher == "AES/CBC/PKCS5Padding":
            decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
            unpadder = padding.PKCS7(128).unpadder()
            return unpadder.update(decryptor.update(data) + decryptor.finalize()) + unpadder.finalize()
        if cipher == "AES/GCM/NoPadding" and fields.get("authenticationTagLength", "128") == "128":
            return AESGCM(key).decrypt(iv, data, None)
    except (ValueError, InvalidTag) as error:  # bad padding or tag: the secret is not the one that encoded it
        raise PasswordDecodeError("the secret does not decode it (padding or tag check failed)") from error
    raise PasswordDecodeError(f"cipher {cipher!r} is not supported")


class PasswordDecoder:
    """Decodes Kafka's encoded passwords with one ``password.encoder.secret`` (never shown by ``repr``)."""

    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("password.encoder.secret is empty")
        self._secret = secret.encode("utf-8")  # PBEKeySpec's chars, as Java's PBKDF2 encodes them: UTF-8

    def __repr__(self) -> str:
        return "PasswordDecoder(secret=<hidden>)"

    def __reduce__(self) -> Any:
        raise TypeError("a PasswordDecoder is not pickled (it holds a secret)")

    @property
    def secret(self) -> str:
        """The secret, for a walk's worker process (it travels on the worker's stdin with the fingerprint key)."""
        return self._secret.decode("utf-8")

    def decode(self, encoded: str) -> str:
        """The clear text of ``encoded``; PasswordDecodeError when this secret cannot give it."""
        fields = parse_encoded(encoded)
        clear = _decrypt(_key(self._secret, fields), fields)
        try:
            text = clear.decode("utf-8")
        except UnicodeDecodeError as error:
            raise PasswordDecodeError("the clear text is not UTF-8: the secret is not the one that encoded it") \
                from error
        if str(len(text.encode("utf-16-le")) // 2) != fields.get("passwordLength"):  # Java's String.length
            raise PasswordDecodeError("the clear text's length is not passwordLength: wrong secret")
        return text
