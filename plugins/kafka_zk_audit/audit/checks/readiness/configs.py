"""Readiness of what the migration copies from the dynamic configs, the ACLs and the delegation tokens (R07-R12):
SCRAM credentials, ACLs, tokens, encrypted passwords, the cluster-default broker config and client quotas.

Secret values are never read: SCRAM users and password configs are recognised by their key names. Each check is
a declaration (``engine.check``): those on ``configs`` rows are evaluated together in one select. Every frame is
keyed by ``snapshot_id``.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_zk_audit.audit.checks import engine
from kafka_zk_audit.audit.checks.common import say, text
from kafka_zk_audit.audit.checks.engine import Finds, view
from kafka_zk_audit.contract.schemas import KEY
from kafka_zk_audit.contract.secrets import FINGERPRINT_PREFIX, PASSWORD_CONFIG_NAMES

# Resource types of Kafka's ACL stores (ResourceType, as the store paths spell them) and pattern types.
ACL_RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")
ACL_PATTERN_TYPES = ("literal", "prefixed")
SCRAM_KEYS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# Entity types whose configs the migration reads as client quotas (ZkConfigMigrationClient.iterateClientQuotas).
QUOTA_ENTITY_TYPES = ("users", "clients", "users/clients", "ips")
DEFAULT_ENTITY = "<default>"
# What java.lang.Double.valueOf accepts (after trimming): decimal or hex floats, NaN, Infinity, a d/f suffix.
JAVA_DOUBLE = (
    r"^\s*[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)"
    r"|(0[xX]([0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?))\s*$"
)
# A password config (DynamicBrokerConfig.isPasswordConfig: the name ends with a PASSWORD config's name).
PASSWORD_KEY = "(" + "|".join(name.replace(".", r"\.") + "$" for name in PASSWORD_CONFIG_NAMES) + ")"
REDACTED = "[redacted]"


def _configs(where: Column, detail: Column, broker_id: Column | None = None) -> Finds:
    return Finds(where=where, detail=detail, broker_id=broker_id, path="path")


@engine.check("configs", arguments=("configs",))
def kraft_scram_credentials() -> Finds:
    """R07: /config/users/<u> with SCRAM credentials (key names only; 3.4 does not migrate them)."""
    mechanisms = F.array_sort(F.filter(F.map_keys("config"), lambda key: key.isin(*SCRAM_KEYS)))
    return _configs((F.col("entity_type") == "users") & (F.size(mechanisms) > 0),
                    say("user %s has %s credentials", "entity_name", F.array_join(mechanisms, ", ")))


def _known_acl() -> Column:
    return F.col("resource_type").isin(*ACL_RESOURCE_TYPES) & F.col("pattern_type").isin(*ACL_PATTERN_TYPES)


@view
def readiness_acl_resources(acls: DataFrame) -> DataFrame:
    """(snapshot_id, path, pattern_type, resource_type, resource_name, known, entries): the ACL entries of each
    ACL znode, of a resource and pattern type Kafka knows (``known``; per resource name) or not (resource name
    null); entries of a null resource or pattern type are in neither (``known`` null)."""
    known = _known_acl()
    return acls.groupBy(KEY, "path", "pattern_type", "resource_type",
                        F.when(known, F.col("resource_name")).alias("resource_name"), known.alias("known")).agg(
        F.count(F.lit(1)).alias("entries"))


@engine.check(readiness_acl_resources, arguments=("acls",))
def kraft_acls_present() -> Finds:
    """R08: ACL resource znodes (one row each): an authorizer is in use, which 3.4 and 3.5.0 reject."""
    return Finds(where=F.col("known"), path="path",
                 detail=say("%s ACL entries on %s %s (%s)", "entries", "resource_type", "resource_name",
                            "pattern_type"))


@engine.check(readiness_acl_resources, arguments=("acls",))
def kraft_acl_unknown_resource_type() -> Finds:
    """R08: ACL znodes of a resource or pattern type Kafka does not know (the migration drops them)."""
    return Finds(where=~F.col("known"), path="path",
                 detail=say("%s ACL entries of unknown resource type %s (pattern %s)", "entries", "resource_type",
                            "pattern_type"))


@engine.check("delegation_tokens", arguments=("delegation_tokens",))
def kraft_delegation_tokens() -> Finds:
    """R09: delegation tokens (migrated only from 3.6.0, KAFKA-15219)."""
    return Finds(
        where=F.lit(True), path="path",
        detail=F.concat(F.lit("delegation token "), text("token_id"),
                        F.when(F.col("owner").isNotNull(), F.concat(F.lit(" of "), F.col("owner"))).otherwise("")),
    )


def broker_entity_id() -> Column:
    """A /config/brokers/<id> entity's broker id (null for <default> or any other name)."""
    return F.when(F.col("entity_name").rlike(r"^-?[0-9]{1,9}$"), F.col("entity_name").cast("int"))


@engine.check("configs", arguments=("configs",))
def kraft_encrypted_passwords() -> Finds:
    """R10: dynamic broker password configs (DynamicBrokerConfig.isPasswordConfig by key name), stored encrypted
    with password.encoder.secret; the controllers decrypt them while migrating (KAFKA-14801)."""
    keys = F.array_sort(F.filter(F.map_keys("config"), lambda key: key.rlike(PASSWORD_KEY)))
    return _configs((F.col("entity_type") == "brokers") & (F.size(keys) > 0),
                    say("broker %s has encrypted password configs %s", "entity_name", F.array_join(keys, ", ")),
                    broker_id=broker_entity_id())


@engine.check("configs", arguments=("configs",))
def kraft_default_broker_config() -> Finds:
    """R11: a non-empty /config/brokers/<default> (3.5.0 and 3.5.1 mishandle the cluster-default entity)."""
    return _configs(
        (F.col("entity_type") == "brokers") & (F.col("entity_name") == DEFAULT_ENTITY) & (F.size("config") > 0),
        say("cluster-default dynamic broker configs: %s", F.array_join(F.array_sort(F.map_keys("config")), ", ")),
    )


def _quota() -> Column:
    """On configs rows: a quota entity with configs (the migration reads them as client quotas)."""
    return F.col("entity_type").isin(*QUOTA_ENTITY_TYPES) & F.col("config").isNotNull()


@engine.check("configs", arguments=("configs",))
def kraft_quota_invalid() -> Finds:
    """R12: every value of a quota entity (users without their SCRAM keys, clients, users/<u>/clients/<c>, ips)
    parses as a Java double (ZkAdminManager.clientQuotaPropsToDoubleMap throws otherwise). Secret values (a
    fingerprint or ``[redacted]``) are unknown and not judged."""

    def bad(key: Column, value: Column) -> Column:
        secret = value.startswith(FINGERPRINT_PREFIX) | (value == REDACTED)
        return ~key.isin(*SCRAM_KEYS) & ~secret & ~F.coalesce(value.rlike(JAVA_DOUBLE), F.lit(False))

    invalid = F.array_sort(F.filter(F.map_keys("config"), lambda key: bad(key, F.col("config")[key])))
    values = F.transform(invalid, lambda key: F.concat(key, F.lit("="), F.coalesce(F.col("config")[key], F.lit(""))))
    return _configs(_quota() & (F.size(invalid) > 0),
                    say("%s %s has quota values that are not numbers: %s", "entity_type", "entity_name",
                        F.array_join(values, ", ")))


@engine.check("configs", arguments=("configs",))
def kraft_quota_odd_entity_name() -> Finds:
    """R12: quota entities named <default> or with %-sanitized characters, which releases before 3.6.2 and 3.7.0
    migrate under the wrong name (KAFKA-16222, KAFKA-16411). Entities without quota values are left out."""
    names = F.split("entity_name", "/")
    odd = F.exists(names, lambda name: (name == DEFAULT_ENTITY) | name.contains("%"))
    quota_keys = F.filter(F.map_keys("config"), lambda key: ~key.isin(*SCRAM_KEYS))
    return _configs(_quota() & odd & (F.size(quota_keys) > 0),
                    say("quota entity %s %s has a <default> or sanitized name", "entity_type", "entity_name"))
