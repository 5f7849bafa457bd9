"""The brokers' encoded passwords decoded as Kafka decodes them: against the JDK's own JCE encoding them as
Kafka's EncryptingPasswordEncoder does (an oracle outside Python), against a vector built from the cryptography
primitives in this test, and against the test encoder; a wrong secret or damaged text is refused, and the secret
never shows in a repr, a pickle or a snapshot's fingerprints."""

from __future__ import annotations

import base64
import pickle
import subprocess
from pathlib import Path

import pytest

from kafka_zk_audit.contract.secrets import DECODED_PREFIX, decoded_fingerprint
from kafka_zk_audit.snapshot.password_encoder import PasswordDecodeError, PasswordDecoder
from kafka_zk_audit.snapshot.secrets import Fingerprinter
from kafka_zk_audit_testing.password_encoder import encode_password

JAVA_ENCODER = Path(__file__).parent / "password_vectors" / "KafkaPasswordEncode.java"
SECRET = "encoder-secret-Ω-42"  # not ASCII: Java's PBKDF2 takes the secret's chars as UTF-8


def test_a_password_the_jdk_encodes_as_kafka_does_decodes_to_its_clear_text():
    password = "keystore pässword 9"
    done = subprocess.run(["java", str(JAVA_ENCODER)], input=f"{SECRET}\n{password}\n", capture_output=True,
                          text=True, timeout=120, check=True)
    encoded = done.stdout.strip()
    assert encoded.startswith("keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,")
    assert PasswordDecoder(SECRET).decode(encoded) == password
    with pytest.raises(PasswordDecodeError):
        PasswordDecoder("another-secret").decode(encoded)


def test_a_fixed_vector_built_from_the_primitives_decodes():
    from cryptography.hazmat.primitives import hashes, padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

    salt, iv, clear = bytes(range(256)), bytes(range(16, 32)), "vector-password"
    key = PBKDF2HMAC(hashes.SHA1(), 32, salt, 1000).derive(b"vector-secret")  # the map's algorithms are honoured
    padder = padding.PKCS7(128).padder()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    data = encryptor.update(padder.update(clear.encode()) + padder.finalize()) + encryptor.finalize()
    b64 = base64.b64encode
    encoded = (f"keyFactoryAlgorithm:PBKDF2WithHmacSHA1,cipherAlgorithm:AES/CBC/PKCS5Padding,keyLength:256,"
               f"salt:{b64(salt).decode()},iterations:1000,encryptedPassword:{b64(data).decode()},"
               f"passwordLength:{len(clear)},initializationVector:{b64(iv).decode()}")
    assert PasswordDecoder("vector-secret").decode(encoded) == clear
    assert PasswordDecoder(SECRET).decode(encode_password("round trip", SECRET)) == "round trip"
    with pytest.raises(PasswordDecodeError, match="passwordLength"):
        PasswordDecoder("vector-secret").decode(encoded.replace(f"passwordLength:{len(clear)}", "passwordLength:3"))
    with pytest.raises(PasswordDecodeError):
        PasswordDecoder("vector-secret").decode("not an encoded password")


def test_the_snapshot_fingerprints_the_clear_text_and_never_keeps_the_secret():
    decoder = PasswordDecoder(SECRET)
    assert SECRET not in repr(decoder)
    with pytest.raises(TypeError):
        pickle.dumps(decoder)
    plain, decoding = Fingerprinter(b"k" * 32), Fingerprinter(b"k" * 32, decoder)
    config = b'{"version":1,"config":{"ssl.keystore.password":"%s","ssl.key.password":"%s","x":"1"}}' % (
        encode_password("pw-1", SECRET).encode(), encode_password("pw-2", "other-secret").encode())
    scrubbed, _ = decoding.scrub("/config/brokers/1", config)
    values = __import__("json").loads(scrubbed)["config"]
    assert decoded_fingerprint(values["ssl.keystore.password"]) == plain.fingerprint(b"pw-1")
    assert not values["ssl.key.password"].startswith(DECODED_PREFIX)  # another secret encoded it: as it is
    assert (decoding.decoded, decoding.undecodable) == (1, 1) and values["x"] == "1"
    topic, _ = decoding.scrub("/config/topics/t", config)
    assert topic == config  # only broker configs hold encoded passwords (and topic configs are not secret paths)
