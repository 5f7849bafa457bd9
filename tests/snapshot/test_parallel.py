"""The snapshot over several connections on a real ZooKeeper: the same rows as one connection, the caps shared
out, and nothing left behind when a worker dies."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time

import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient

from kafka_zk_audit.contract.settings import SettingsError, parse_config
from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot import parallel
from kafka_zk_audit.snapshot.connection import ZkSettings
from kafka_zk_audit.snapshot.live import write_snapshot
from kafka_zk_audit.snapshot.parallel import SnapshotWorkerFailed, worker_options
from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.simulator.model import topic_name

pytestmark = pytest.mark.zk

SPEC = ClusterSpec(brokers=5, topics=40, partitions=4, groups=3, consumers_per_group=2, seed=3)
SOME_PARTITION, EXCLUDED_TOPIC = f"/brokers/topics/{topic_name(3)}/partitions/1", f"/brokers/topics/{topic_name(7)}"
SCRAM = "salt=c2FsdHlzYWx0,stored_key=c3RvcmVka2V5,server_key=c2VydmVya2V5,iterations=4096"


def snapshot(settings: ZkSettings, warehouse: Warehouse, snapshot_id: str, options: SnapshotOptions) -> dict:
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start(timeout=30)
    try:
        return write_snapshot(reader, settings, warehouse, snapshot_id, options)
    finally:
        reader.stop()
        reader.close()


def sorted_rows(warehouse: Warehouse, snapshot_id: str) -> list[dict]:
    """Every column of every row, sorted by path."""
    return sorted(pq.read_table(warehouse.snapshot_dir(snapshot_id)).to_pylist(), key=lambda row: row["path"])


@pytest.mark.parametrize("read_mode", ["multi", "single"])
@pytest.mark.parametrize("exclude", [("/zookeeper",), ("/zookeeper", SOME_PARTITION, EXCLUDED_TOPIC, "/consumers")])
def test_parallel_walk_gives_the_rows_of_one_connection(zk_server, zk_chroot, tmp_path, read_mode, exclude):
    with Simulator(hosts=zk_server.hosts + zk_chroot) as simulator:
        simulator.write(SPEC)
        user = json.dumps({"version": 1, "config": {"SCRAM-SHA-256": SCRAM}}).encode()
        simulator.admin.create("/config/users/parallel-walk-user", user, makepath=True)
        settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot)
        warehouse = Warehouse(str(tmp_path / "wh"))
        one = snapshot(settings, warehouse, "20260101T000000Z",
                       SnapshotOptions(read_mode=read_mode, exclude=exclude))
        three = snapshot(settings, warehouse, "20260101T000001Z",
                         SnapshotOptions(read_mode=read_mode, exclude=exclude, parallel_connections=3))
        topics = simulator.admin.get_children("/brokers/topics")

    rows_one, rows_three = sorted_rows(warehouse, "20260101T000000Z"), sorted_rows(warehouse, "20260101T000001Z")
    assert len(rows_one) > 40 * 4 * 2  # partitions and their states, at least
    assert rows_three == rows_one  # path, data (secrets fingerprinted with the same key), every stat field
    assert len({row["path"] for row in rows_three}) == len(rows_three)
    by_path = {row["path"]: row for row in rows_three}
    assert by_path["/config/users/parallel-walk-user"]["fingerprinted"] == "values"
    assert "/brokers/topics" in by_path
    missing = {f"/brokers/topics/{t}" for t in topics} - by_path.keys()
    assert len(topics) == 40 and missing == ({EXCLUDED_TOPIC} if EXCLUDED_TOPIC in exclude else set())
    assert not any(p.startswith(prefix) for p in by_path for prefix in exclude)

    assert three["znodes"] == one["znodes"] == len(rows_one) and three["bytes"] == one["bytes"]
    assert three["zxid_window"] == one["zxid_window"]
    assert three["sync_zxid"]["start"] >= three["zxid_window"][1]
    assert three["read_mode"] == read_mode and three["options"]["parallel_connections"] == 3
    assert [w["worker"] for w in three["workers"]] == [0, 1, 2]
    assert sum(w["znodes"] for w in three["workers"]) == three["znodes"]
    assert all(w["znodes"] > 0 for w in three["workers"])
    assert sorted(three["files"]) == sorted(p.name for p in (tmp_path / "wh" / "snapshots" /
                                                              "snapshot_id=20260101T000001Z").glob("*.parquet"))
    assert {name.split("-")[1] for name in three["files"]} == {"w00", "w01", "w02"}
    assert three["secrets"] == one["secrets"]
    assert warehouse.complete_snapshots() == ["20260101T000000Z", "20260101T000001Z"]


def test_a_tree_without_topics_is_walked_by_one_worker(zk_server, zk_chroot, zk_client, tmp_path):
    for i in range(30):
        zk_client.create(f"/consumers/g/offsets/t/{i}", str(i).encode(), makepath=True)
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot)
    warehouse = Warehouse(str(tmp_path / "wh"))
    manifest = snapshot(settings, warehouse, "20260101T000000Z", SnapshotOptions(parallel_connections=4))
    assert manifest["znodes"] == 1 + 4 + 30 and [w["worker"] for w in manifest["workers"]] == [0]


def test_a_worker_that_dies_leaves_no_snapshot(zk_server, zk_chroot, tmp_path, monkeypatch):
    started: list[subprocess.Popen] = []
    start_worker = parallel._start_worker

    def start_and_keep():
        process = start_worker()
        started.append(process)
        return process

    monkeypatch.setattr(parallel, "_start_worker", start_and_keep)
    with Simulator(hosts=zk_server.hosts + zk_chroot) as simulator:
        simulator.write(SPEC)
        settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot)
        warehouse = Warehouse(str(tmp_path / "wh"))
        folder = tmp_path / "wh" / "snapshots" / "snapshot_id=20260101T000000Z"
        # Slow enough (200 reads/s for the whole snapshot: seconds for either worker; small row groups) that the
        # workers are still walking, with files already written, when one of them is killed.
        options = SnapshotOptions(parallel_connections=2, reads_per_second=200, row_group_rows=20)
        outcome: dict = {}

        def run() -> None:
            try:
                outcome["manifest"] = snapshot(settings, warehouse, "20260101T000000Z", options)
            except Exception as exc:  # noqa: BLE001 - the test looks at it below
                outcome["error"] = exc

        walk = threading.Thread(target=run)
        walk.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
                len(started) == 2 and all(list(folder.glob(f"part-w0{i}-*.parquet")) for i in (0, 1))):
            time.sleep(0.05)
        assert len(started) == 2 and list(folder.glob("part-w00-*.parquet")), "the workers did not get going"
        assert started[1].poll() is None
        started[1].send_signal(signal.SIGKILL)
        walk.join(timeout=60)

    assert not walk.is_alive()
    assert "manifest" not in outcome and isinstance(outcome["error"], SnapshotWorkerFailed)
    assert "worker 1 of 2" in str(outcome["error"]) and "killed by signal 9" in str(outcome["error"])
    assert all(process.poll() is not None for process in started)  # worker 0 was stopped, not left walking
    assert started[0].returncode != 0
    assert not folder.exists() and warehouse.complete_snapshots() == []


def test_the_load_caps_are_shared_out_among_the_workers():
    options = SnapshotOptions(max_reads_in_flight=10_000, max_bytes_in_flight=32 * 2**20, reads_per_second=20_000,
                              parallel_connections=3)
    for mode in ("multi", "single"):
        share = worker_options(options, 3, mode)
        assert share.parallel_connections == 1 and share.read_mode == mode
        assert 3 * share.max_reads_in_flight <= options.max_reads_in_flight
        assert 3 * share.max_bytes_in_flight <= options.max_bytes_in_flight
        assert 3 * share.in_flight(mode) <= options.in_flight(mode)
        assert 3 * share.reads_per_second == pytest.approx(options.reads_per_second)
    assert worker_options(SnapshotOptions(reads_per_second=0), 4, "multi").reads_per_second == 0  # unpaced stays so


def test_parallel_connections_setting():
    assert parse_config(None).snapshot.parallel_connections == 1  # one connection unless asked
    config = parse_config({"snapshot": {"parallel_connections": 4}})
    assert SnapshotOptions(**config.snapshot.model_dump()).parallel_connections == 4  # as the DAG passes it
    for bad in (0, -1, "2", 1.5, 65):
        with pytest.raises(SettingsError, match="parallel_connections"):
            parse_config({"snapshot": {"parallel_connections": bad}})
    with pytest.raises(ValueError, match="parallel_connections"):
        SnapshotOptions(parallel_connections=0)


def test_the_workers_decode_broker_passwords_with_the_secret_handed_on_their_stdin(zk_server, zk_chroot, tmp_path):
    """The brokers' password.encoder.secret reaches each worker as the fingerprint key does: the rows of a parallel
    walk hold the fingerprint of the clear text, as one connection's do, and never the secret."""
    from kafka_zk_audit.contract.secrets import decoded_fingerprint
    from kafka_zk_audit.snapshot.password_encoder import PasswordDecoder
    from kafka_zk_audit.snapshot.secrets import Fingerprinter, warehouse_key
    from kafka_zk_audit_testing.password_encoder import encode_password

    secret, key = "parallel-encoder-secret", "listener.name.internal.ssl.key.password"
    with Simulator(hosts=zk_server.hosts + zk_chroot) as simulator:
        simulator.write(ClusterSpec(brokers=3, topics=12, partitions=2, groups=0, seed=4))
        simulator.admin.create("/config/brokers/3", json.dumps({"version": 1, "config": {
            key: encode_password("pw-of-broker-3", secret)}}).encode(), makepath=True)
    settings = ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot)
    warehouse = Warehouse(str(tmp_path / "wh"))
    reader = KazooClient(**settings.kazoo_kwargs())
    reader.start(timeout=30)
    try:
        for snapshot_id, workers in (("20260101T000000Z", 1), ("20260101T000001Z", 3)):
            manifest = write_snapshot(reader, settings, warehouse, snapshot_id,
                                      SnapshotOptions(parallel_connections=workers), decoder=PasswordDecoder(secret))
            assert len(manifest["workers"]) == workers
    finally:
        reader.stop()
        reader.close()
    expected = Fingerprinter(warehouse_key(warehouse)).fingerprint(b"pw-of-broker-3")
    for snapshot_id in ("20260101T000000Z", "20260101T000001Z"):
        [row] = [r for r in sorted_rows(warehouse, snapshot_id) if r["path"] == "/config/brokers/3"]
        assert decoded_fingerprint(json.loads(row["data"])["config"][key]) == expected
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
