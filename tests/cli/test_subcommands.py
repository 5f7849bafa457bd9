"""``kafka-zk-audit snapshot`` and ``audit`` against a real ZooKeeper and a real spark-submit; exit codes of all
three stage subcommands before anything starts."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient

from kafka_zk_audit_testing.simulator import ClusterSpec, Simulator
from kafka_zk_audit_testing.zk_server import free_port
from tests.cli.console_script import Background, airflow_home_env, clean_env, cli
from tests.cli.in_process import Ran, run_main

SPEC = ClusterSpec(era="2.x", brokers=3, racks=1, topics=3, partitions=3, replication_factor=2,
                   groups=1, consumers_per_group=2, threads_per_consumer=1, seed=11)
PASSWORD = "subcommand-5ecret-pw"


def tree_paths(client: KazooClient, path: str = "/") -> set[str]:
    """Every znode under the client's chroot, by a plain recursive walk (the oracle of the snapshot)."""
    found = {path}
    for child in client.get_children(path):
        found |= tree_paths(client, f"{path.rstrip('/')}/{child}")
    return found


@pytest.fixture(scope="module")
def refused_snapshots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Two snapshots the console script refuses after a wait: of an ensemble nobody listens for (its 10 s
    pre-flight) and through an Airflow connection that does not exist (Airflow's own lookup). Started in the
    background before the module's Spark audit, so that they wait while it runs."""
    folder = tmp_path_factory.mktemp("refused")
    port = free_port()  # nothing listens there
    down = Background(["snapshot", "--zk", f"127.0.0.1:{port}", "--warehouse", str(folder / "wh")])
    no_conn = Background(["snapshot", "--conn-id", "no_such_connection_here"], airflow_home_env(folder))
    yield {"down": down, "port": port, "warehouse": folder / "wh", "no_conn": no_conn}
    down.stop()
    no_conn.stop()


@pytest.fixture(scope="module")
def snapshot_through_a_connection(zk_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """A snapshot, in the background, of a cluster written with a digest identity, through an Airflow connection
    that holds its password (the cluster stays open while it runs: its brokers are ephemeral)."""
    chroot = "/cli_subcommands_digest"
    zk_server.ensure_chroot(chroot)
    warehouse = tmp_path_factory.mktemp("through-a-connection") / "wh"
    sim = Simulator(hosts=zk_server.hosts + chroot, auth=("digest", f"kafka:{PASSWORD}"))
    call = None
    try:
        sim.write(SPEC)
        env = clean_env({"AIRFLOW_CONN_ZK_SUBCOMMANDS": json.dumps({
            "conn_type": "zookeeper", "host": zk_server.hosts, "login": "kafka", "password": PASSWORD,
            "extra": {"chroot": chroot}})})
        call = Background(["snapshot", "--conn-id", "eu=zk_subcommands", "--warehouse", str(warehouse)], env)
        yield {"call": call, "warehouse": warehouse, "chroot": chroot}
    finally:
        if call is not None:
            call.result()  # the cluster is closed only after its snapshot
            call.stop()
        sim.close()


@pytest.fixture(scope="module")
def snapshot_and_audit(zk_server, tmp_path_factory, refused_snapshots, snapshot_through_a_connection):
    """One simulated cluster with one planted problem, snapshotted and audited through the command line (the
    module's other console-script calls, taken as parameters, already run in the background meanwhile)."""
    chroot = "/cli_subcommands"
    zk_server.ensure_chroot(chroot)
    warehouse = tmp_path_factory.mktemp("subcommands") / "wh"
    sim = Simulator(hosts=zk_server.hosts + chroot)
    try:
        sim.write(SPEC)
        planted = sim.plant("under_replicated")
        snap = cli(["snapshot", "--zk", zk_server.hosts + chroot, "--warehouse", str(warehouse)])
        reader = KazooClient(hosts=zk_server.hosts + chroot)
        reader.start(timeout=15)
        try:
            paths = tree_paths(reader)
        finally:
            reader.stop()
            reader.close()
    finally:
        sim.close()
    assert snap.returncode == 0, snap.stderr
    manifest = json.loads(snap.stdout)
    audit = cli(["audit", "--snapshot-id", manifest["snapshot_id"], "--warehouse", str(warehouse),
                 "--spark-master", "local[2]"])
    return {"warehouse": warehouse, "snap": snap, "manifest": manifest, "paths": paths, "planted": planted,
            "audit": audit}


def test_snapshot_prints_its_manifest_and_the_parquet_rows_match(snapshot_and_audit):
    manifest, warehouse = snapshot_and_audit["manifest"], snapshot_and_audit["warehouse"]
    # an unnamed --zk is named after its address: the chroot's last segment
    assert manifest["snapshot_id"].endswith("-cli_subcommands") and manifest["cluster"] == "cli_subcommands"
    assert manifest["chroot"] == "/cli_subcommands"
    table = pq.read_table(warehouse / "snapshots" / f"snapshot_id={manifest['snapshot_id']}")
    assert table.num_rows == manifest["znodes"] > 50
    assert set(table.column("path").to_pylist()) == snapshot_and_audit["paths"]
    assert "snapshot " in snapshot_and_audit["snap"].stderr  # progress on stderr, only JSON on stdout


def test_audit_writes_the_findings_and_prints_audit_json(snapshot_and_audit):
    result, manifest = snapshot_and_audit["audit"], snapshot_and_audit["manifest"]
    assert result.returncode == 0, result.stderr[-5000:]
    printed = json.loads(result.stdout)
    assert printed["snapshot_id"] == manifest["snapshot_id"] and printed["baseline_snapshot_id"] is None
    assert printed["checks"]["under_replicated"] == 1 and printed["new_findings"] == printed["findings"]
    findings_dir = snapshot_and_audit["warehouse"] / "findings" / f"snapshot_id={manifest['snapshot_id']}"
    assert (findings_dir / "_SUCCESS").exists()
    rows = pq.read_table(findings_dir).to_pylist()
    planted = snapshot_and_audit["planted"]
    assert [(r["topic"], r["partition"], r["path"]) for r in rows if r["check_id"] == "under_replicated"] == [
        (planted.topic, planted.partition, planted.path)
    ]
    assert len(rows) == printed["findings"]


def test_snapshot_through_an_airflow_connection_keeps_its_password_out_of_every_output(
        snapshot_through_a_connection):
    result, warehouse = snapshot_through_a_connection["call"].result(), snapshot_through_a_connection["warehouse"]
    assert result.returncode == 0, result.stderr
    manifest = json.loads(result.stdout)
    assert manifest["cluster"] == "eu" and manifest["snapshot_id"].endswith("-eu")
    assert manifest["identity"] == "digest:kafka" and manifest["chroot"] == snapshot_through_a_connection["chroot"]
    assert PASSWORD not in result.stdout + result.stderr
    written = b"".join(p.read_bytes() for p in warehouse.rglob("*") if p.is_file())
    assert PASSWORD.encode() not in written


def test_usage_and_connection_errors_exit_2_before_anything_starts(refused_snapshots, tmp_path, capsys,
                                                                   monkeypatch):
    def run(args: list[str]) -> Ran:
        return run_main(args, capsys, monkeypatch)

    down, port = refused_snapshots["down"].result(), refused_snapshots["port"]
    assert down.returncode == 2, down.stderr
    assert f"cannot reach ZooKeeper at 127.0.0.1:{port}" in down.stderr and down.stdout == ""
    assert not refused_snapshots["warehouse"].exists()
    malformed = run(["snapshot", "--zk", "no-port-here"])
    assert malformed.returncode == 2 and "HOST:PORT" in malformed.stderr
    no_conn = refused_snapshots["no_conn"].result()
    assert no_conn.returncode == 2 and "no Airflow connection 'no_such_connection_here'" in no_conn.stderr
    neither = run(["snapshot"])
    assert neither.returncode == 2 and "--zk" in neither.stderr
    missing = run(["audit", "--snapshot-id", "20260101T000000Z-default", "--warehouse", str(tmp_path / "wh")])
    assert missing.returncode == 2 and "has no manifest" in missing.stderr
    bad_id = run(["audit", "--snapshot-id", "../etc", "--warehouse", str(tmp_path / "wh")])
    assert bad_id.returncode == 2 and "is not YYYYMMDDTHHMMSSZ" in bad_id.stderr
    settings = tmp_path / "audit.yaml"
    settings.write_text("sla:\n  reassignment: soon\n")
    bad_settings = run(["reaudit", "--config", str(settings), "--warehouse", str(tmp_path / "wh")])
    assert bad_settings.returncode == 2 and "'sla.reassignment' is 'soon'" in bad_settings.stderr
    nothing = run(["reaudit", "--warehouse", str(tmp_path / "wh")])
    assert nothing.returncode == 2 and "no stored snapshot" in nothing.stderr
    bad_since = run(["reaudit", "--since", "last tuesday", "--warehouse", str(tmp_path / "wh")])
    assert bad_since.returncode == 2 and "neither a date" in bad_since.stderr
