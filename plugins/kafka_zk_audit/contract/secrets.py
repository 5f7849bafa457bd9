"""Which znode data is secret, and how the snapshot marks what it replaced by a fingerprint.

Kafka keeps three kinds of secret in ZooKeeper, all under paths it makes creator-only in secure mode:
SCRAM credentials in ``/config/users/<user>`` (keys ``SCRAM-SHA-256`` / ``SCRAM-SHA-512``), password
configs of brokers in ``/config/brokers/<id|<default>>`` (stored encrypted with the broker's
``password.encoder.secret``) and delegation tokens in ``/delegation_token/tokens/<id>``.

The snapshot replaces them by a keyed fingerprint before anything is written (``snapshot.secrets``):
config values one by one (the rest of the config stays readable), token data whole. The
``fingerprinted`` column says which: ``values`` or ``data``. The normalizer reads these columns.
"""

from __future__ import annotations

import re

# The snapshot column values of ``fingerprinted``.
FINGERPRINTED_VALUES = "values"
FINGERPRINTED_DATA = "data"
FINGERPRINT_PREFIX = "hmac-sha256:"
# A broker password config that the snapshot decoded with the brokers' ``password.encoder.secret`` (a paired
# cluster's ``migration.password_encoder_secret_conn_id``) before fingerprinting it: the fingerprint of the clear
# text, as KRaft holds it, so the migration diff can compare the two (``decoded_fingerprint``).
DECODED_PREFIX = FINGERPRINT_PREFIX + "decoded:"

# The snapshot column values of ``unreadable``: the auditor may not read the znode's data (nor list
# its children: ZooKeeper's READ permission covers both), or it read the data but then may not list
# the children (its ACL changed in between).
NO_READ_PERMISSION = "no_read_permission"
CHILDREN_NO_READ_PERMISSION = "children_no_read_permission"
UNREADABLE_REASONS = (NO_READ_PERMISSION, CHILDREN_NO_READ_PERMISSION)

# Kafka's dynamic broker configs of type PASSWORD (KafkaConfig ``ConfigDef.Type.PASSWORD`` ∩ dynamic
# configs). Kafka matches them by suffix (``DynamicBrokerConfig.isPasswordConfig``: name.endsWith), so
# ``listener.name.<l>.ssl.keystore.password`` and ``listener.name.<l>.<mechanism>.sasl.jaas.config``
# are password configs too. The static PASSWORD configs are listed as well in case someone wrote
# them by hand.
PASSWORD_CONFIG_NAMES = (
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "sasl.jaas.config",
    "password.encoder.secret",
    "password.encoder.old.secret",
    "delegation.token.master.key",
    "delegation.token.secret.key",
)
# A config key whose value is secret: the names above (as suffixes), anything ending in ``password``,
# naming a ``secret``, and SCRAM credentials. Java regex syntax works in Spark too.
SECRET_CONFIG_KEY = (
    "(?i)(^SCRAM-|password$|secret|" + "|".join(re.escape(name) + "$" for name in PASSWORD_CONFIG_NAMES) + ")"
)
# Kafka's encoded password values (``EncryptingPasswordEncoder``): ``encryptedPassword:<b64>,…``.
ENCRYPTED_VALUE = "encryptedPassword[:=]"

# Paths (relative to the chroot) whose config values may be secret, paths whose data is secret whole, and both.
SECRET_VALUE_PATHS = ("/config/users/", "/config/brokers/")
SECRET_DATA_PATHS = ("/delegation_token/tokens/",)
SECRET_PATHS = (*SECRET_VALUE_PATHS, *SECRET_DATA_PATHS)

_SECRET_KEY_RE = re.compile(SECRET_CONFIG_KEY)
_ENCRYPTED_VALUE_RE = re.compile(ENCRYPTED_VALUE)


def decoded_fingerprint(value: object) -> str | None:
    """The fingerprint of a decoded password's clear text in the KRaft side's form; None for any other value."""
    if isinstance(value, str) and value.startswith(DECODED_PREFIX):
        return FINGERPRINT_PREFIX + value[len(DECODED_PREFIX):]
    return None


def is_secret_config(key: str, value: object) -> bool:
    """Would Kafka treat this config entry as a secret (a password config, SCRAM credential, encrypted value)?"""
    return bool(_SECRET_KEY_RE.search(key)) or (isinstance(value, str) and bool(_ENCRYPTED_VALUE_RE.search(value)))
