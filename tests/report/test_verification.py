"""The readiness page's last chapter: a paired cluster's migration verdict, divergences first, escaped; nothing for
a cluster that is not paired."""

from __future__ import annotations

from typing import Any

from kafka_zk_audit.report.readiness import render_html, render_text
from tests.report.test_readiness import HOSTILE_DETAIL, parse, ready_report

EQUAL = {"topics": 4, "partitions": 12, "configs": 3, "ACLs": 2, "quotas": 1, "users": 1}


def chapter(**changes: Any) -> dict[str, Any]:
    return {"status": "verified", "verified": True, "error": None, "release": "3.9", "offset": 41,
            "log_end_offset": 41, "migration_state": "MIGRATION", "lag_records": 0, "lag_ms": 0,
            "max_lag_records": 10_000, "max_lag_ms": 300_000, "equal": EQUAL, "divergences": [], "notes": [],
            **changes}


DIVERGED = chapter(status="diverged", verified=False, divergences=[
    {"check_id": "migration_diverged_partition", "severity": "critical", "topic": "orders", "partition": 1,
     "broker_id": None, "path": "/brokers/topics/orders", "detail": HOSTILE_DETAIL}])


def test_a_verified_pair_is_the_last_chapter_with_what_is_equal() -> None:
    page = render_html([{**ready_report(), "migration_verification": chapter()}])
    assert "MIGRATION VERIFIED" in page and page.index("MIGRATION VERIFIED") > page.index("must not reuse")
    assert "4 topics, 12 partitions, 3 configs, 2 ACLs, 1 quotas and 1 users equal" in page
    assert "compared at offset 41, Kafka 3.9" in page and "migration diff" in page  # the overview's column
    text = render_text({**ready_report(), "migration_verification": chapter()})
    assert text.splitlines()[-1].startswith("MIGRATION VERIFIED (0 divergence(s)): 4 topics")


def test_divergences_come_first_with_evidence_and_remedy_escaped() -> None:
    page = render_html([{**ready_report(), "migration_verification": DIVERGED}])
    assert page.index("Divergences (1)") < page.index("4 topics, 12 partitions")
    assert "MIGRATION DIVERGED" in page and "Do not finalize." in page
    assert "<img" not in page and HOSTILE_DETAIL in "".join(parse(page).text)
    text = render_text({**ready_report(), "migration_verification": DIVERGED})
    assert "  - [critical] migration_diverged_partition at /brokers/topics/orders: " in text


def test_an_unverified_pair_says_why_and_a_plain_cluster_has_no_chapter() -> None:
    unverified = chapter(status="unverified", verified=False, error="FilesSourceError: /k: no such directory")
    page = render_html([{**ready_report(), "migration_verification": unverified}])
    assert "NOT VERIFIED" in page and "/k: no such directory" in page
    plain = render_html([ready_report()])
    assert "MIGRATION" not in plain and "migration diff" not in plain
    assert render_text(ready_report()) == render_text({**ready_report(), "migration_verification": None})
