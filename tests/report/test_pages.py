"""The pages the product writes beside the Data Docs (alerts, readiness, histories) as headless Chromium shows them,
offline, in a 1280 × 800 window: the Data Docs' Bootstrap from the site's vendored copies, tables that sort, filter
and fit the window, and no resource that fails to load, no script error; a Data Docs page too (GX's logo).

The pages are written by the product's own functions from small hand-written inputs (the alerts and readiness
tests' data, a history summary and its rows), into a warehouse whose Data Docs site GX built (pandas, no Spark).
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.gate.docs_assets import CDN_ASSETS, VENDOR_DIR, localize
from kafka_zk_audit.history.job import publish_in_data_docs, timeline_page
from kafka_zk_audit.report.alerts_page import link_alerts_in_data_docs, write_alerts_page
from kafka_zk_audit.report.page_style import SCRIPTS, STYLESHEETS, PageLinks, links_for
from kafka_zk_audit.report.publish import publish_readiness
from kafka_zk_audit_testing.browser import PageCheck, check_page, text_of
from tests.gate.test_docs_assets import gx_site, real_assets  # noqa: F401 (fixtures)
from tests.report.test_alert import NOT_IN_ISR, OFFLINE, S1, S2, S3, UNDER, write_snapshot
from tests.report.test_alert_state import S4, alert
from tests.report.test_readiness import (
    HOSTILE_DETAIL,
    blocked_report,
    dual_write_report,
    hostile_report,
    ready_report,
)

WIDTH, HEIGHT = 1280, 800
HISTORY_ID = "20250101T030000Z-0a1b2c3d"
LONG_TOPIC = "payments.eu-west-1.settlement-instructions.v2.compacted.dead-letter-queue.retry-after-30-minutes"
LONG = {"check_id": "partition_reassignment_stuck", "severity": "error", "topic": LONG_TOPIC, "partition": 11,
        "path": f"/admin/reassign_partitions/{LONG_TOPIC}/partitions/11/adding-replicas-and-removing-replicas",
        "detail": "reassignment of " + LONG_TOPIC + "-11 pending for 3 snapshots: adding [4,5,6], removing [1,2,3]"}

# what the page reports, read inside it once its scripts ran (JSON back to the test)
PROBE = """(() => {
  const root = document.documentElement;
  const visible = e => e.offsetParent !== null && e.getClientRects().length > 0;
  const tables = [...document.querySelectorAll('table')].filter(visible).map(t => ({
    id: t.className, width: t.scrollWidth, room: t.parentElement.clientWidth,
    right: Math.ceil(t.getBoundingClientRect().right)}));
  return {
    pageWidth: root.scrollWidth, viewport: root.clientWidth, tables,
    images: [...document.images].map(i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0})),
    sheets: [...document.querySelectorAll('link[rel=stylesheet]')].map(l => ({href: l.href, ok: !!l.sheet})),
    bootstrap: getComputedStyle(document.querySelector('h1.h3') || document.body).fontSize === '28px',
    tableJs: !!(window.jQuery && window.jQuery.fn.bootstrapTable),
    ourTables: document.querySelectorAll('table.kza').length,
    initialised: document.querySelectorAll('.bootstrap-table table.kza').length,
    searches: document.querySelectorAll('.bootstrap-table .search input').length,
    sortable: document.querySelectorAll('.bootstrap-table th .sortable').length,
    pwned: document.body.dataset.pwned || null,
  };
})()"""

# sorts the first searchable table of the page by its first column, twice, and filters it by ``needle``
SORT_AND_FILTER = """(async (needle) => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const box = document.querySelector('.bootstrap-table');
  const table = () => box.querySelector('.fixed-table-body table');
  const firsts = () => [...table().querySelectorAll('tbody tr')].map(r => r.cells[0].textContent.trim());
  const before = firsts();
  box.querySelector('th .sortable').click(); await sleep(100);
  const ascending = firsts();
  box.querySelector('th .sortable').click(); await sleep(100);
  const descending = firsts();
  const search = box.querySelector('.search input');
  search.value = needle; search.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true})); await sleep(800);
  return {before, ascending, descending, filtered: firsts(), text: table().querySelector('tbody').textContent};
})(%r)"""


def history_rows() -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """A history's summary, its listed intervals, controller failovers and leadership changes (run_history's)."""
    t = datetime(2025, 1, 1, 2, 30, tzinfo=UTC)
    summary = {"history_id": HISTORY_ID, "cluster": "default", "txns": 12345, "first_zxid": 4294967297,
               "last_zxid": 4294979641, "first_time": "2025-01-01T02:00:00Z", "last_time": "2025-01-01T03:00:00Z",
               "chroot": "/kafka", "min_interval_ms": 1000, "controller_failovers": 2,
               "checks": {"interval_controller_missing": {"listed": 1, "short": 3},
                          "interval_under_replicated": {"listed": 2, "short": 0}}}
    intervals = [
        {"check_id": "interval_controller_missing", "severity": "critical", "group_id": None, "topic": None,
         "partition": None, "broker_id": None, "path": "/controller", "start_zxid": 4294967300, "end_zxid": 4294967310,
         "start_time": t, "duration_ms": 4200, "detail": "no /controller for 4.2 s (session of broker 1 expired)"},
        {"check_id": "interval_under_replicated", "severity": "warning", "group_id": None, "topic": LONG_TOPIC,
         "partition": 11, "broker_id": None, "path": f"/brokers/topics/{LONG_TOPIC}/partitions/11/state",
         "start_zxid": 4294970000, "end_zxid": None, "start_time": t, "duration_ms": 1800000,
         "detail": f"isr [1] smaller than replicas [1,2,3]: {LONG_TOPIC}-11 since zxid 0x100000a90, still open"},
        {"check_id": "interval_under_replicated", "severity": "warning", "group_id": None, "topic": "orders",
         "partition": 1, "broker_id": None, "path": "/brokers/topics/orders/partitions/1/state",
         "start_zxid": 4294968000, "end_zxid": 4294968100, "start_time": t, "duration_ms": 65000,
         "detail": "isr [1] smaller than replicas [1, 2]"},
    ]
    failovers = [{"broker_id": b, "epoch": e, "from_zxid": z, "from_time": t, "to_zxid": z + 9, "to_time": t,
                  "gap_ms": g} for b, e, z, g in ((1, 7, 4294967297, None), (2, 8, 4294967310, 4200))]
    leadership = [{"topic": topic, "partition": p, "leader": p % 3 + 1, "leader_epoch": p,
                   "isr": "[1, 2, 3]" if p % 2 else "[1]", "from_zxid": 4294967300 + p, "to_zxid": None}
                  for topic in ("orders", LONG_TOPIC) for p in range(6)]
    return summary, intervals, failovers, leadership


def build_pages(wh: Warehouse) -> dict[str, str]:
    """Write the alerts, readiness and history pages of a run into ``wh`` the way the DAG's tasks do; their URLs."""
    for snapshot_id, baseline in ((S1, None), (S2, S1)):
        write_snapshot(wh, snapshot_id, baseline)
    write_snapshot(wh, S3, S2, findings=[(OFFLINE, S1), (UNDER, S1), (NOT_IN_ISR, S2), (LONG, S3)])
    write_snapshot(wh, S4, S3, findings=[(OFFLINE, S1), (UNDER, S1), (LONG, S3)])
    for snapshot_id in (S1, S2, S3, S4):
        alert(wh, snapshot_id)
    reports = [blocked_report(), ready_report(), dual_write_report(),
               {**hostile_report(), "snapshot_id": "20261122T070431Z-x"}]
    for report in reports:
        wh.write_json(f"{wh.run_dir(report['snapshot_id'])}/readiness.json", report)

    summary, intervals, failovers, leadership = history_rows()
    timeline = f"{wh.history_dir(HISTORY_ID)}/timeline.html"

    def render(links: PageLinks) -> str:
        return timeline_page(summary, intervals, failovers, leadership, links)

    wh.write_text(timeline, render(links_for(wh, timeline)))
    wh.write_json(f"{wh.history_dir(HISTORY_ID)}/history.json", summary)
    history_index = publish_in_data_docs(wh, summary, render)

    alerts = write_alerts_page(wh, [S4])
    assert alerts
    link_alerts_in_data_docs(wh)
    readiness = publish_readiness(wh, [r["snapshot_id"] for r in reports], emit=lambda _: None)
    return {"alerts": alerts, "readiness": readiness["page"], "readiness in the Data Docs":
            f"{wh.data_docs_dir}/readiness/index.html", "readiness of a cluster": f"{wh.root}/readiness/eu.html",
            "histories": history_index, "history": wh.history_page(HISTORY_ID), "history's timeline": timeline}


@pytest.fixture(scope="module")
def pages(gx_site: Path, real_assets: Path, tmp_path_factory: pytest.TempPathFactory,  # noqa: F811
          ) -> dict[str, str]:
    """Every page, in a warehouse whose Data Docs site GX built and the gate's step pointed at local assets."""
    root = tmp_path_factory.mktemp("pages") / "wh"
    shutil.copytree(gx_site, root / "data_docs")
    assert localize(root / "data_docs", real_assets) == 3
    wh = Warehouse(str(root))
    found = build_pages(wh)
    found["Data Docs index"] = wh.data_docs_index
    found["Data Docs validation"] = str(next((root / "data_docs" / "validations").rglob("*.html")))
    return found


@pytest.mark.parametrize("root", ["wh", "memory://pages/wh"], ids=["local", "memory"])
def test_links_are_relative_to_where_each_page_is(tmp_path: Path, root: str) -> None:
    assert set(STYLESHEETS + SCRIPTS) <= set(CDN_ASSETS.values())  # what the gate vendors into the site
    wh = Warehouse(str(tmp_path / root) if "://" not in root else f"{root}-{tmp_path.name}")
    readiness, alerts = f"{wh.root}/readiness/index.html", f"{wh.data_docs_dir}/alerts/index.html"
    timeline = f"{wh.history_dir(HISTORY_ID)}/timeline.html"
    assert links_for(wh, readiness) == PageLinks()  # no site yet: a plain page, no navbar link
    wh.write_text(wh.data_docs_index, "<html><body></body></html>")
    for asset in STYLESHEETS + SCRIPTS[:1]:
        wh.write_text(f"{wh.data_docs_dir}/{VENDOR_DIR}/{asset.rel}", "/* */")
    assert links_for(wh, alerts) == PageLinks(None, (("Data Docs", "../index.html"),))  # one asset missing
    wh.write_text(f"{wh.data_docs_dir}/{VENDOR_DIR}/{SCRIPTS[1].rel}", "/* */")
    wh.write_text(wh.history_page(), "<html></html>")
    assert links_for(wh, alerts) == PageLinks("../static/vendor/", (("Data Docs", "../index.html"),
                                                                     ("Histories", "../history/index.html")))
    assert links_for(wh, readiness).vendor == "../data_docs/static/vendor/"
    assert links_for(wh, timeline) == PageLinks("../../data_docs/static/vendor/", (
        ("Data Docs", "../../data_docs/index.html"), ("Histories", "../../data_docs/history/index.html")))


def assert_loads_and_fits(name: str, check: PageCheck) -> dict[str, Any]:
    """Nothing failed to load or raised, every image and stylesheet loaded, no table wider than its box or the
    window, no horizontal scroll; the probe's values."""
    found = check.value
    assert not check.failed, (name, check.failed)
    assert not check.errors, (name, check.errors)
    assert all(image["ok"] for image in found["images"]), (name, found["images"])
    assert found["sheets"] and all(sheet["ok"] for sheet in found["sheets"]), (name, found["sheets"])
    assert found["viewport"] == WIDTH and found["pageWidth"] <= found["viewport"], (name, found)
    assert found["tables"], name
    for box in found["tables"]:
        assert box["width"] <= box["room"] + 1 and box["right"] <= WIDTH, (name, box)
    return found


OURS = ("alerts", "readiness", "readiness in the Data Docs", "readiness of a cluster", "histories", "history",
        "history's timeline")


@pytest.mark.parametrize("name", OURS)
def test_our_pages_load_everything_offline_fit_the_window_and_sort_and_filter(pages: dict[str, str], name: str,
                                                                            chromium_ok: str) -> None:
    found = assert_loads_and_fits(name, check_page(pages[name], PROBE, width=WIDTH, height=HEIGHT))
    assert found["bootstrap"] and found["tableJs"], found
    assert len(found["sheets"]) == 2 and "static/vendor/bootstrap@4.3.1" in found["sheets"][0]["href"]
    assert found["ourTables"] >= 1 and found["initialised"] == found["ourTables"], found  # bootstrap-table ran
    assert found["searches"] >= 1 and found["sortable"] >= found["ourTables"], found
    assert found["pwned"] is None  # the hostile cluster name and detail stayed text


def test_the_alerts_table_sorts_and_filters(pages: dict[str, str], chromium_ok: str) -> None:
    check = check_page(pages["alerts"], SORT_AND_FILTER % LONG_TOPIC[:20], width=WIDTH, height=HEIGHT)
    assert not check.errors, check.errors
    found = check.value
    assert sorted(found["before"]) == found["ascending"] and found["descending"] == found["ascending"][::-1]
    assert len(found["before"]) == 3 and len(found["filtered"]) == 1 and LONG_TOPIC in found["text"]


def test_the_data_docs_pages_load_everything_offline_gx_logo_included(pages: dict[str, str],
                                                                     chromium_ok: str) -> None:
    for name in ("Data Docs index", "Data Docs validation"):
        found = assert_loads_and_fits(name, check_page(pages[name], PROBE, width=WIDTH, height=HEIGHT))
        logos = [image for image in found["images"] if "logo" in (image["src"] or "")]
        assert logos and logos[0]["src"].endswith("static/images/logo-long.png"), found["images"]
    index = Path(pages["Data Docs index"]).read_text()
    for link in ('href="alerts/index.html"', 'href="readiness/index.html"', 'href="history/index.html"'):
        assert link in index
    assert "great-expectations-web-assets" not in index and "dataContextId" not in index


def test_without_vendored_assets_the_pages_are_plain_readable_and_load_nothing(tmp_path: Path,
                                                                               chromium_ok: str) -> None:
    wh = Warehouse(str(tmp_path / "wh"))  # no gate ran: no Data Docs site, no assets
    written = build_pages(wh)
    for name in ("alerts", "readiness", "history"):
        html = Path(written[name]).read_text()
        assert "<script" not in html and "<link" not in html, name
        check = check_page(written[name], PROBE, width=WIDTH, height=HEIGHT)
        assert not check.failed and not check.errors, (name, check.failed, check.errors)
        found = check.value
        assert found["pageWidth"] <= found["viewport"] and not found["tableJs"], (name, found)
        for box in found["tables"]:
            assert box["width"] <= box["room"] + 1, (name, box)
    readiness = text_of(Path(written["readiness"]).read_text())
    assert HOSTILE_DETAIL in readiness and "Blockers: fix these before migrating (2)" in readiness
