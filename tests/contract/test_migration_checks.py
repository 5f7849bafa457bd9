"""The migration verification's findings: each divergence kind and each deliberate omission is documented in
docs/checks.md with the Kafka code it comes from, and every kind the diff can report is one of them."""

from __future__ import annotations

import re
from pathlib import Path

from kafka_zk_audit.contract.catalogue import CHECK_IDS, SEVERITIES, SNAPSHOT_CHECK_IDS
from kafka_zk_audit.contract.migration_checks import BY_ID, CHECK_OF_KIND, DIVERGENCES, OMISSIONS

CHECKS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "checks.md"


def test_each_divergence_is_documented_with_its_kafka_code_and_remedy():
    page = CHECKS_PAGE.read_text()
    section = page[page.index("## Entity `znodes`"):]  # each kind is a check of the catalogue (entity znodes)
    verification = page[page.index("## Migration verification"):]
    for divergence in DIVERGENCES:
        assert f"| [`{divergence.check_id}`](#{divergence.check_id}) | {divergence.severity} |" in verification
        assert divergence.severity in SEVERITIES
        assert divergence.remedy.endswith(".") and len(divergence.remedy) <= 500
        body = section[section.index(f"### `{divergence.check_id}`"):]
        body = body[:body.index("\n### ", 4)]
        assert f"**Kafka:** `{divergence.source}`" in body and f"**Remedy:** {divergence.remedy}" in body
        assert re.search(r"\.(scala|java)", divergence.source)


def test_each_omission_names_the_kafka_code_it_comes_from():
    section = CHECKS_PAGE.read_text().split("### Left out on purpose (no finding)")[1]
    for _, source in OMISSIONS:
        assert f"*Kafka:* `{source}`" in section
        assert re.search(r"\.(scala|java)", source)
    assert any("3.6.1" in what for what, _ in OMISSIONS)  # topics pending deletion
    assert any("broker registrations" in what for what, _ in OMISSIONS)


def test_the_diff_reports_only_documented_ids_that_no_check_function_uses():
    assert set(CHECK_OF_KIND.values()) <= set(BY_ID)
    assert set(BY_ID) <= set(CHECK_IDS)  # findings of the catalogue: gated, alerted and summarized like any
    assert not set(BY_ID) & set(SNAPSHOT_CHECK_IDS)  # but raised by the diff of a paired cluster only
