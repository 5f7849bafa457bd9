"""The baseline of the history checks: the last audited snapshot of the same ensemble and chroot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka_zk_audit.contract.warehouse import Warehouse, choose_baseline, ensemble_identity


def manifest(ensemble: str | None, chroot: str | None, started_at: str | None) -> dict[str, Any]:
    return {key: value for key, value in
            (("ensemble", ensemble), ("chroot", chroot), ("started_at", started_at)) if value is not None}


def test_ensemble_identity_is_normalized() -> None:
    same = [
        manifest("ZK2:2181,zk1:2181", "/kafka", None),
        manifest(" zk1:2181 , zk2 ", "/kafka/", None),
        manifest("zk2,zk1", "kafka", None),
    ]
    assert {ensemble_identity(m) for m in same} == {"zk1:2181,zk2:2181/kafka"}
    assert ensemble_identity(manifest("zk1:2181", "/", None)) == "zk1:2181"
    assert ensemble_identity(manifest("zk1:2181", None, None)) == "zk1:2181"
    assert ensemble_identity(manifest("[::1]:2182,[::1]", "/", None)) == "[::1]:2181,[::1]:2182"
    assert ensemble_identity(manifest("zk1:2181", "/Kafka", None)) != ensemble_identity(manifest("zk1", "/kafka", None))
    assert ensemble_identity(manifest("zk1:2182", "/", None)) != ensemble_identity(manifest("zk1:2181", "/", None))
    assert ensemble_identity({}) is None


def test_baseline_is_the_newest_earlier_snapshot_of_the_same_ensemble() -> None:
    a, b = ("zk1:2181,zk2:2181", "/kafka"), ("zk9:2181", "/")
    audited = [
        ("20260101T000000Z", manifest(*a, "2026-01-01T00:00:00+00:00")),
        ("20260101T010000Z", manifest(*a, "2026-01-01T01:00:00+00:00")),
        ("20260101T020000Z", manifest(*b, "2026-01-01T02:00:00+00:00")),          # another cluster, newer
        ("20260101T021500Z", manifest("zk1:2181,zk2:2181", "/other", "2026-01-01T02:15:00+00:00")),  # other chroot
        ("20260101T040000Z", manifest(*a, "2026-01-01T04:00:00+00:00")),          # after this one
    ]
    current = manifest("zk2:2181,ZK1:2181", "/kafka/", "2026-01-01T03:00:00+00:00")
    assert choose_baseline("20260101T030000Z", current, audited) == "20260101T010000Z"
    assert choose_baseline("20260101T030000Z", manifest(*b, "2026-01-01T03:00:00+00:00"), audited) == (
        "20260101T020000Z"
    )
    # The first snapshot of an ensemble has no baseline, whatever else the warehouse holds.
    assert choose_baseline("20260101T030000Z", manifest("zk7:2181", "/", "2026-01-01T03:00:00+00:00"), audited) is None
    assert choose_baseline("20251231T000000Z", manifest(*a, "2025-12-31T00:00:00+00:00"), audited) is None


def test_start_times_come_from_the_manifests() -> None:
    a = ("zk1:2181", "/")
    # Ids carry a suffix that sorts against their start times; the manifests decide.
    audited = [
        ("20260101T000000Z-b", manifest(*a, "2026-01-01T00:00:00.100000+00:00")),
        ("20260101T000000Z-a", manifest(*a, "2026-01-01T00:00:00.900000+00:00")),
        ("20260101T000000Z-z", manifest(*a, "2026-01-01T00:00:01.500000+00:00")),
    ]
    current = manifest(*a, "2026-01-01T00:00:01.000000+00:00")
    assert choose_baseline("20260101T000001Z", current, audited) == "20260101T000000Z-a"
    # Without start times, the times in the ids (then the ids) order the snapshots.
    bare = [(sid, {"ensemble": "zk1:2181"}) for sid in ("20260101T000000Z", "20260102T000000Z", "20260104T000000Z")]
    assert choose_baseline("20260103T000000Z", {"ensemble": "zk1:2181"}, bare) == "20260102T000000Z"


def test_previous_audited_reads_the_manifests(tmp_path: Path) -> None:
    warehouse = Warehouse(str(tmp_path / "wh"))

    def snapshot(snapshot_id: str, ensemble: str, chroot: str, audited: bool = True) -> None:
        started = f"{snapshot_id[:4]}-{snapshot_id[4:6]}-{snapshot_id[6:8]}T{snapshot_id[9:11]}:00:00+00:00"
        warehouse.write_json(warehouse.manifest_path(snapshot_id), {
            "snapshot_id": snapshot_id, "ensemble": ensemble, "chroot": chroot, "started_at": started,
        })
        if audited:
            success = Path(warehouse.findings_dir(snapshot_id)) / "_SUCCESS"
            success.parent.mkdir(parents=True)
            success.touch()

    snapshot("20260101T000000Z", "127.0.0.1:2181", "/cluster_a")
    snapshot("20260101T010000Z", "127.0.0.1:2181", "/cluster_b")
    snapshot("20260101T020000Z", "127.0.0.1:2181", "/cluster_a", audited=False)  # never audited
    snapshot("20260101T030000Z", "127.0.0.1:2181", "/cluster_b")
    snapshot("20260101T040000Z", "127.0.0.1:2181", "/cluster_a", audited=False)  # the one being audited
    assert warehouse.previous_audited("20260101T040000Z") == "20260101T000000Z"
    assert warehouse.previous_audited("20260101T030000Z") == "20260101T010000Z"
    assert warehouse.previous_audited("20260101T000000Z") is None
