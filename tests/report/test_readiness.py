"""The readiness report: text and HTML renderings of hand-written ``readiness.json`` dicts, the pages written
through the warehouse (local and fsspec memory://), and the page as headless Chromium draws it."""

from __future__ import annotations

import struct
import subprocess
import tempfile
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.report.readiness import load_reports, page_name, render_html, render_text, write_pages
from kafka_zk_audit_testing.browser import FLAGS, render_dom, text_of

REMEDY_CLUSTER_ID = "Start one ZooKeeper-mode broker: it creates /cluster/id; never copy an id from another cluster."
REMEDY_TOPIC_ID = "Let a controller with IBP 2.8 or later assign topic ids (restart the controller), then re-audit."
REMEDY_REASSIGN = "Wait for the reassignment to finish or cancel it before migrating."
CHECKLIST = [
    {"item": "inter.broker.protocol.version is 3.4 or later on every broker",
     "why": "ZooKeeper shows only lower bounds of the IBP", "how": "read server.properties of each broker"},
    {"item": "authorizer class of the brokers", "why": "not stored in ZooKeeper",
     "how": "read authorizer.class.name in server.properties"},
]
RED, AMBER, GREEN = (0xC6, 0x28, 0x28), (0xEF, 0x8F, 0x00), (0x2E, 0x7D, 0x32)


def row(condition_id: str, check_id: str, level: str, detail: str, remedy: str, **subject: Any) -> dict[str, Any]:
    return {"condition_id": condition_id, "check_id": check_id, "level": level, "topic": None, "partition": None,
            "group_id": None, "broker_id": None, "path": None, "detail": detail, "remedy": remedy, **subject}


def blocked_report() -> dict[str, Any]:
    """Two blockers and a warning; the warning comes first in ``rows`` (the renderers must reorder)."""
    return {
        "snapshot_id": "20261122T070430Z-eu", "cluster": "eu", "target_version": "3.5",
        "verdict": "blocked", "phase": {"phase": "not_started", "detail": "no /migration"},
        "counts": {"blocker": 2, "high": 0, "warn": 1, "info": 0},
        "rows": [
            row("R06", "kraft_reassignment_in_flight", "warn", "adding replicas [4]", REMEDY_REASSIGN,
                topic="orders", partition=2, path="/brokers/topics/orders"),
            row("R17", "kraft_cluster_id_missing", "blocker", "/cluster/id does not exist", REMEDY_CLUSTER_ID,
                path="/cluster/id"),
            row("R03", "kraft_topic_without_id", "blocker", "topic JSON v2 has no topic_id", REMEDY_TOPIC_ID,
                topic="payments", path="/brokers/topics/payments"),
        ],
        "node_ids": [1, 2, 3, 1001], "not_visible": CHECKLIST, "generated_at": "2026-11-22T07:05:00+00:00",
    }


def ready_report() -> dict[str, Any]:
    return {
        "snapshot_id": "20261122T070430Z-us", "cluster": "us", "target_version": "3.9", "verdict": "ready",
        "phase": {"phase": "not_started", "detail": ""}, "counts": {"blocker": 0, "high": 0, "warn": 0, "info": 0},
        "rows": [], "node_ids": [1, 2, 3], "not_visible": CHECKLIST, "generated_at": "2026-11-22T07:05:00+00:00",
    }


def dual_write_report() -> dict[str, Any]:
    return {
        "snapshot_id": "20261122T070430Z", "cluster": None, "target_version": "3.9",
        "verdict": "ready_with_warnings",
        "phase": {"phase": "dual_write", "detail": "KRaft controller 3000 at epoch 7, metadata offset 4711"},
        "counts": {"blocker": 0, "high": 1, "warn": 0, "info": 1},
        "rows": [
            row("R08", "kraft_acls_present", "info", "3 ACLs", "Keep the authorizer on the controllers.",
                path="/kafka-acl/Topic/orders"),
            row("R10", "kraft_encrypted_passwords", "high", "ssl.keystore.password is encrypted",
                "Give the controllers the brokers' password.encoder.secret.", broker_id=2,
                path="/config/brokers/2"),
        ],
        "node_ids": [1, 2, 3], "not_visible": CHECKLIST, "generated_at": "2026-11-22T07:05:00+00:00",
    }


HOSTILE_NAME = "<script>document.body.dataset.pwned='name'</script>\"'&"
HOSTILE_DETAIL = "<img src=x onerror=\"document.body.dataset.pwned='detail'\"></td></tr></table><b>bold</b>"


def hostile_report() -> dict[str, Any]:
    report = blocked_report()
    report["cluster"] = HOSTILE_NAME
    report["rows"][1] = {**report["rows"][1], "detail": HOSTILE_DETAIL, "path": "/cluster/<id>&\"x\""}
    report["phase"] = {"phase": "unknown", "detail": "<iframe src=https://example.org>"}
    return report


class Elements(HTMLParser):
    """Every start tag of a page, and the text of each element with a ``class`` (an independent HTML oracle)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    parser.close()
    return parser


# --- text ---------------------------------------------------------------------------------------

def test_text_of_a_blocked_cluster_lists_blockers_with_remedies_before_the_warning() -> None:
    text = render_text(blocked_report())
    lines = text.splitlines()
    assert lines[0].startswith("cluster eu (snapshot 20261122T070430Z-eu): BLOCKED")
    assert "Kafka 3.5" in lines[0] and "2 blocker(s), 0 high, 1 warn, 0 info" in lines[0]
    blockers = lines.index("Blockers: fix these before migrating (2):")
    warnings = lines.index("Warnings (1):")
    assert blockers < warnings
    cluster_id = next(i for i, line in enumerate(lines) if "kraft_cluster_id_missing" in line)
    topic_id = next(i for i, line in enumerate(lines) if "kraft_topic_without_id" in line)
    reassign = next(i for i, line in enumerate(lines) if "kraft_reassignment_in_flight" in line)
    assert blockers < cluster_id < warnings and blockers < topic_id < warnings and reassign > warnings
    assert lines[cluster_id + 1] == f"      remedy: {REMEDY_CLUSTER_ID}"
    assert lines[topic_id + 1] == f"      remedy: {REMEDY_TOPIC_ID}"
    assert lines[reassign + 1] == f"      remedy: {REMEDY_REASSIGN}"
    assert "topic payments at /brokers/topics/payments: topic JSON v2 has no topic_id" in lines[topic_id]
    assert "topic orders partition 2 at /brokers/topics/orders" in lines[reassign]
    assert "migration phase" not in text  # nothing running
    assert "Node ids the KRaft controllers must not reuse (R14): 1, 2, 3, 1001" in lines
    checklist = lines.index("ZooKeeper cannot show these: check them yourself:")
    assert checklist > reassign
    assert lines[checklist + 1].startswith("  [ ] inter.broker.protocol.version is 3.4 or later")
    assert "how: read authorizer.class.name in server.properties" in text


def test_text_of_a_ready_and_of_a_dual_write_cluster() -> None:
    ready = render_text(ready_report()).splitlines()
    assert ready[0].startswith("cluster us (snapshot 20261122T070430Z-us): READY for")
    assert "no readiness condition found in ZooKeeper" in ready and not any("remedy" in line for line in ready)

    dual = render_text(dual_write_report()).splitlines()
    assert dual[0].startswith("cluster default (snapshot 20261122T070430Z): READY WITH WARNINGS")
    high = dual.index("High: fix before migrating, or know the risk (1):")
    info = dual.index("Information (1):")
    assert high < info  # the high row comes first although the dict lists it second
    assert "broker 2 at /config/brokers/2" in dual[high + 1]
    assert "migration phase: dual_write: KRaft controller 3000 at epoch 7, metadata offset 4711" in dual


def test_text_shows_control_characters_instead_of_sending_them_to_the_terminal() -> None:
    report = blocked_report()
    report["rows"][1]["detail"] = "clear\x1b[2Jscreen\rback"
    text = render_text(report)
    assert "\x1b" not in text and "\r" not in text
    assert "clear\\x1b[2Jscreen\\x0dback" in text


def test_text_of_a_report_without_verdict_or_checklist_derives_them() -> None:
    report = blocked_report()
    del report["verdict"], report["not_visible"]
    text = render_text(report)
    assert "BLOCKED" in text.splitlines()[0]
    assert "  [ ] authorizer class: ACLs in ZooKeeper (R08) show an authorizer was used" in text  # the contract's


# --- HTML ---------------------------------------------------------------------------------------

def test_html_is_one_self_contained_page_with_the_fleet_overview_first() -> None:
    page = render_html([blocked_report(), ready_report(), dual_write_report()])
    elements = parse(page)
    assert "script" not in elements.tags and "link" not in elements.tags and "img" not in elements.tags
    assert "http://" not in page and "https://" not in page and "src=" not in page
    overview = page[page.index("<table", page.index("<main")):page.index("</table>")]
    assert " overview" in overview[:overview.index(">")]
    cells = parse(overview).text
    assert cells[:5] == ["cluster", "target", "verdict", "blockers", "migration phase"]
    assert cells[5:10] == ["eu", "3.5", "BLOCKED", "2", "not_started"]
    assert cells[10:15] == ["us", "3.9", "READY", "0", "not_started"]
    assert cells[15:20] == ["default", "3.9", "READY WITH WARNINGS", "0", "dual_write"]
    sections = page.split('<section class="cluster"')[1:]
    assert len(sections) == 3
    eu = sections[0]
    assert eu.index("Blockers: fix these before migrating (2)") < eu.index("Warnings (1)")
    assert eu.index("kraft_cluster_id_missing") < eu.index("kraft_reassignment_in_flight")
    assert REMEDY_CLUSTER_ID in eu and REMEDY_TOPIC_ID in eu and REMEDY_REASSIGN in eu
    assert "1, 2, 3, 1001" in eu and "ZooKeeper cannot show these: check them yourself" in eu
    assert "No readiness condition found in ZooKeeper." in sections[1]
    assert "KRaft controller 3000 at epoch 7, metadata offset 4711" in sections[2]


def test_html_escapes_hostile_names_paths_and_details() -> None:
    page = render_html([hostile_report()])
    elements = parse(page)
    assert set(elements.tags) <= {"html", "head", "meta", "title", "style", "body", "nav", "main", "h1", "h2", "h3",
                                  "p", "span", "table", "thead", "tbody", "tr", "th", "td", "a", "code", "section",
                                  "ul", "li", "b", "br"}
    assert "<script" not in page and "<img" not in page and "<iframe" not in page
    assert elements.tags.count("table") == 3  # overview, blockers, warnings: the detail closed none of them
    text = "".join(elements.text)
    assert HOSTILE_NAME in text and HOSTILE_DETAIL in text and "/cluster/<id>&\"x\"" in text
    assert "&lt;script&gt;" in page and "&lt;img src=x onerror=&quot;" in page


# --- pages in the warehouse ---------------------------------------------------------------------

@pytest.mark.parametrize("remote", [False, True], ids=["local", "memory"])
def test_write_pages_and_load_reports_through_the_warehouse(tmp_path: Path, remote: bool) -> None:
    warehouse = Warehouse(f"memory://readiness-{tmp_path.name}" if remote else str(tmp_path / "wh"))
    reports = [blocked_report(), dual_write_report(), {**ready_report(), "cluster": "index"},
               {**hostile_report(), "snapshot_id": "20261122T070431Z-x"}]
    for report in reports:
        warehouse.write_json(f"{warehouse.run_dir(report['snapshot_id'])}/readiness.json", report)
    ids = ["20261122T070430Z-eu", "20261122T070430Z", "20261122T070430Z-us", "20261122T080000Z-absent",
           "20261122T070431Z-x"]
    loaded = load_reports(warehouse, ids)
    assert [r["snapshot_id"] for r in loaded] == ["20261122T070430Z-eu", "20261122T070430Z", "20261122T070430Z-us",
                                                  "20261122T070431Z-x"]  # the absent one is left out
    assert loaded[0] == blocked_report()
    with pytest.raises(ValueError, match="is not YYYYMMDDTHHMMSSZ"):
        load_reports(warehouse, ["../../etc"])

    written = write_pages(warehouse, loaded)
    base = f"{warehouse.root}/readiness"
    assert written[:4] == [f"{base}/index.html", f"{base}/eu.html", f"{base}/default.html",
                           f"{base}/cluster-index.html"]
    assert len(written) == 5 and all(url.rsplit("/", 1)[0] == base for url in written)
    listed = sorted(p.rsplit("/", 1)[-1] for p in warehouse.fs.ls(warehouse.fs_path(base), detail=False))
    assert listed == sorted(url.rsplit("/", 1)[-1] for url in written)  # no temp file left, nothing elsewhere
    with warehouse.fs.open(warehouse.fs_path(f"{base}/index.html"), "r") as handle:
        fleet = handle.read()
    assert fleet == render_html(loaded)
    with warehouse.fs.open(warehouse.fs_path(f"{base}/eu.html"), "r") as handle:
        assert handle.read() == render_html([loaded[0]])


def test_page_names_stay_in_the_readiness_folder_and_unique() -> None:
    taken: set[str] = set()
    names = [page_name(n, taken) for n in ("eu", "eu", "../../etc/passwd", "index", "", "a b/c", "..")]
    assert names == ["eu", "eu-2", "_.._etc_passwd", "cluster-index", "default", "a_b_c", "default-2"]


# --- headless Chromium ----------------------------------------------------------------------------

def screenshot(binary: str, page: Path, width: int, height: int) -> bytes:
    """A PNG of the page as headless Chromium draws it in a ``width`` × ``height`` window."""
    with tempfile.TemporaryDirectory(prefix="kza-shot-") as folder:
        out = Path(folder) / "page.png"
        result = subprocess.run(
            [binary, *FLAGS, f"--user-data-dir={folder}/profile", "--hide-scrollbars", "--force-device-scale-factor=1",
             f"--window-size={width},{height}", f"--screenshot={out}", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=120,
        )
        assert out.is_file(), f"chromium wrote no screenshot (exit {result.returncode}): {result.stderr[-2000:]}"
        return out.read_bytes()


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit truecolour PNG (zlib + the five row filters)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        assert zlib.crc32(kind + chunk) == struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        header = chunk if kind == b"IHDR" else header
        idat += chunk if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - bpp] if x >= bpp else 0
            up, corner = previous[x], previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, [row_bytes if bpp == 3 else bytes(b for i, b in enumerate(row_bytes) if i % 4 != 3)
                           for row_bytes in rows]


def colour_counts(rows: list[bytes]) -> dict[tuple[int, int, int], int]:
    counts: dict[tuple[int, int, int], int] = {}
    for line in rows:
        for i in range(0, len(line), 3):
            pixel = (line[i], line[i + 1], line[i + 2])
            counts[pixel] = counts.get(pixel, 0) + 1
    return counts


def near(counts: dict[tuple[int, int, int], int], colour: tuple[int, int, int], tolerance: int = 3) -> int:
    """Pixels within ``tolerance`` of ``colour`` on every channel."""
    return sum(n for pixel, n in counts.items()
               if all(abs(a - b) <= tolerance for a, b in zip(pixel, colour, strict=True)))


def test_pages_in_headless_chromium(chromium_ok: str, tmp_path: Path) -> None:
    warehouse = Warehouse(str(tmp_path / "wh"))
    pages = write_pages(warehouse, [hostile_report(), ready_report(), dual_write_report()])
    fleet, hostile_page, ready_page = (Path(url) for url in pages[:3])

    width, height = 1000, 700
    png = screenshot(chromium_ok, fleet, width, height)
    shot_width, shot_height, rows = decode_png(png)
    assert (shot_width, shot_height) == (width, height)
    counts = colour_counts(rows)
    assert len(counts) > 50  # text, tables and badges, not a blank page
    assert near(counts, (255, 255, 255)) < width * height * 0.95
    assert near(counts, RED) > 2000 and near(counts, AMBER) > 2000 and near(counts, GREEN) > 2000  # three badges

    _, _, ready_rows = decode_png(screenshot(chromium_ok, ready_page, width, height))
    ready_counts = colour_counts(ready_rows)
    assert near(ready_counts, GREEN) > 2000 and near(ready_counts, RED) == 0 and near(ready_counts, AMBER) == 0
    _, _, blocked_rows = decode_png(screenshot(chromium_ok, hostile_page, width, height))
    blocked_counts = colour_counts(blocked_rows)
    assert near(blocked_counts, RED) > 2000 and near(blocked_counts, GREEN) == 0

    dom = render_dom(fleet)
    assert "data-pwned" not in dom  # nothing of the hostile name or detail ran
    assert "<script" not in dom.lower() and "<img" not in dom.lower() and "<iframe" not in dom.lower()
    text = text_of(dom)
    assert HOSTILE_NAME in text and HOSTILE_DETAIL in text
    assert text.index("Blockers: fix these before migrating (2)") < text.index("Warnings (1)")
    assert text.index(REMEDY_CLUSTER_ID) < text.index("Warnings (1)") < text.index(REMEDY_REASSIGN)
    assert "ZooKeeper cannot show these: check them yourself" in text
    assert "KRaft controller 3000 at epoch 7, metadata offset 4711" in text
