"""/brokers/ids/<id> registrations, versions 1 to 5, into the ``brokers`` table."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from . import json_schemas, kinds
from .common import (
    Parse,
    accepted,
    document_reasons,
    field_of,
    fields_of,
    lenient_long,
    name_part,
    own,
    scope,
    to_int,
)

KNOWN_VERSIONS = (1, 2, 3, 4, 5)
# Kafka's listener regex (SocketServerConfigs.LISTENER_URI_REGEX): listener, host (IPv6 bracketed), port.
ENDPOINT = r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)"


def _endpoint_parts(endpoint: Column, protocol_map: Column) -> tuple[Column, Column, Column, Column]:
    listener = F.regexp_extract(endpoint, ENDPOINT, 1)
    protocol = F.when(protocol_map.isNull(), listener).otherwise(F.try_element_at(protocol_map, listener))
    host = F.nullif(F.regexp_extract(endpoint, ENDPOINT, 2), F.lit(""))
    port = F.regexp_extract(endpoint, ENDPOINT, 3).try_cast("int")
    return listener, protocol, host, port


def _endpoint(endpoint: Column, protocol_map: Column) -> Column:
    listener, protocol, host, port = _endpoint_parts(endpoint, protocol_map)
    return F.struct(
        listener.alias("listener"),
        protocol.alias("security_protocol"),
        host.alias("host"),
        port.alias("port"),
    )


def _endpoint_reasons(version: Column) -> list[Column]:
    """Kafka rejects a v2+ registration whose endpoint does not parse or names an unmapped listener."""
    endpoints, protocol_map = field_of("endpoints"), field_of("listener_security_protocol_map")

    def unparsable(e: Column) -> Column:
        return ~F.coalesce(e.rlike(ENDPOINT), F.lit(False)) | _endpoint_parts(e, protocol_map)[3].isNull()

    def unmapped(e: Column) -> Column:
        return ~F.map_contains_key(protocol_map, _endpoint_parts(e, protocol_map)[0])

    first_unparsable = F.try_element_at(F.filter(endpoints, unparsable), F.lit(1))
    first_unmapped = F.try_element_at(F.filter(endpoints, unmapped), F.lit(1))
    v2_plus = version >= 2
    return [
        F.when(v2_plus & endpoints.isNull(), F.lit("missing field endpoints")),
        F.when(
            v2_plus & F.exists(endpoints, unparsable),
            F.concat(
                F.lit("endpoint does not match LISTENER://host:port: "),
                F.coalesce(first_unparsable, F.lit("null")),
            ),
        ),
        F.when(
            v2_plus & protocol_map.isNotNull() & F.exists(endpoints, unmapped),
            F.concat(F.lit("listener of "), first_unmapped, F.lit(" not in listener_security_protocol_map")),
        ),
    ]


def parses() -> list[Parse]:
    """Broker registrations: their reason and a ``brokers`` struct (the brokers table's columns)."""
    with scope(kinds.BROKER):
        version = field_of("version")
        v1 = version == 1
        checks = [
            F.when(own("broker_id").isNull(), F.lit("broker id is not an integer")),
            *document_reasons(json_schemas.BROKER, KNOWN_VERSIONS, version_required=True),
            F.when(v1 & field_of("host").isNull(), F.lit("missing field host")),
            F.when(v1 & field_of("port").isNull(), F.lit("missing field port")),
            *_endpoint_reasons(version),
        ]
        protocol_map = field_of("listener_security_protocol_map")
        plaintext = F.lit("PLAINTEXT")
        v1_endpoints = F.array(
            F.struct(
                plaintext.alias("listener"),
                plaintext.alias("security_protocol"),
                *fields_of("host", "port"),
            )
        )
        endpoints = F.when(v1, v1_endpoints).otherwise(
            F.transform(field_of("endpoints"), lambda e: _endpoint(e, protocol_map))
        )
        values = [
            own("broker_id").alias("broker_id"),
            version.alias("version"),
            *fields_of("host", "port", "jmx_port"),
            lenient_long(field_of("timestamp")).alias("timestamp"),
            field_of("rack").alias("rack"),
            endpoints.alias("endpoints"),
            protocol_map.alias("listener_security_protocol_map"),
            field_of("features").alias("features"),
            F.col("ephemeral_owner").alias("session"),
            F.col("czxid").alias("broker_epoch"),
            (F.col("ephemeral_owner") != 0).alias("is_ephemeral"),
        ]
        return [Parse((kinds.BROKER,), "brokers", checks, values, json=json_schemas.BROKER,
                      derived={"broker_id": to_int(name_part(kinds.BROKER_PATH))})]


def tables(parsed: DataFrame) -> dict[str, DataFrame]:
    """brokers."""
    return {"brokers": accepted(parsed, "brokers")}
