"""The malformed-corpus file format and loader (no Spark: the cases themselves run in test_normalize.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_zk_audit.audit.normalize import kinds
from kafka_zk_audit.contract.schemas import SNAPSHOT
from kafka_zk_audit_testing.malformed_corpus import load_malformed_corpus, parse_case, znode_row

CORPUS_DIR = Path(__file__).resolve().parents[1] / "data" / "malformed"


def test_header_then_exact_bytes_without_one_final_newline():
    case = parse_case(
        "x.znode", b"# path: /brokers/ids/7\n# kind: broker\n# reason-contains: not valid JSON\nab\xff\n"
    )
    assert (case.path, case.kind, case.reason_contains, case.data) == (
        "/brokers/ids/7", "broker", "not valid JSON", b"ab\xff"
    )  # fmt: skip
    kept = parse_case("y.znode", b"# path: /a\n# kind: k\n# reason-contains: r\n42\n\n")
    assert kept.data == b"42\n"
    empty = parse_case("z.znode", b"# path: /a\n# kind: k\n# reason-contains: r\n")
    assert empty.data == b""


def test_data_null_ephemeral_owner_and_data_that_looks_like_a_comment():
    case = parse_case(
        "n.znode", b"# path: /a\n# kind: k\n# reason-contains: r\n# data: null\n# ephemeral-owner: 9\n"
    )
    assert (case.data, case.ephemeral_owner) == (None, 9)
    hashed = parse_case("h.znode", b"# path: /a\n# kind: k\n# reason-contains: r\n# not a header\n")
    assert hashed.data == b"# not a header"


def test_missing_header_is_an_error():
    with pytest.raises(ValueError, match="reason-contains"):
        parse_case("bad.znode", b"# path: /a\n# kind: k\n{}")


def test_checked_in_corpus_covers_every_family_with_unique_paths():
    cases = load_malformed_corpus(CORPUS_DIR)
    assert len(cases) >= 15
    assert len({case.path for case in cases}) == len(cases)
    families = {
        kinds.BROKER, kinds.TOPIC, kinds.PARTITION_STATE, kinds.CONTROLLER, kinds.CONTROLLER_EPOCH,
        kinds.CLUSTER_ID, kinds.FEATURE, kinds.MIGRATION, kinds.CONFIG, kinds.CONFIG_CHANGE, kinds.ISR_CHANGE,
        kinds.LOG_DIR_EVENT, kinds.REASSIGNMENT, kinds.PREFERRED_ELECTION, kinds.PRODUCER_ID_BLOCK, kinds.ACL,
        kinds.ACL_CHANGE, kinds.DELEGATION_TOKEN, kinds.CONSUMER_REGISTRATION, kinds.CONSUMER_OWNER,
        kinds.CONSUMER_OFFSET,
    }  # fmt: skip
    assert families <= {case.kind for case in cases}
    assert all(len(case.row()) == len(SNAPSHOT.fields) for case in cases)


def test_znode_row_matches_the_snapshot_schema():
    row = znode_row("/controller_epoch", "5", version=3)
    assert [field.name for field in SNAPSHOT.fields][:2] == ["path", "data"]
    assert (row[0], bytes(row[1]), row[7], row[11]) == ("/controller_epoch", b"5", 3, 1)
    assert znode_row("/a", None)[1] is None
