"""``kafka-zk-audit run``: exit codes (0 passed, 1 gate failed, 2 usage/settings/connection, 3 the audit could not
complete) and the failed task read from the run's log (a whole run: tests/system/test_cli_run.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_zk_audit.cli.runner import first_failed_task
from kafka_zk_audit_testing.zk_server import free_port
from tests.cli.console_script import Background, airflow_home_env
from tests.cli.in_process import Ran, run_main


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """The console script's environment with an Airflow home of the test's own (absent until Airflow starts)."""
    return airflow_home_env(tmp_path)


@pytest.fixture(scope="module", autouse=True)
def lone_dead_cluster_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Background, int, Path]]:
    """``run --zk`` of one ensemble nobody listens for, through the console script: (the call, its port, its
    folder). Started with the module, so that its 10 s pre-flight overlaps the other tests (the dead member of a
    fleet waits as long)."""
    folder = tmp_path_factory.mktemp("lone-dead")
    port = free_port()  # nothing listens there
    call = Background(["run", "--zk", f"127.0.0.1:{port}", "--warehouse", str(folder / "wh")],
                      airflow_home_env(folder))
    yield call, port, folder
    call.stop()


LOG_OF_A_FAILED_SNAPSHOT = """\
2026-01-01T00:00:00.000001Z [info     ] [DAG TEST] starting task_id=snapshot map_index=-1 [airflow.sdk] loc=dag.py:1
2026-01-01T00:00:00.000002Z [error    ] Task failed with exception     [task] loc=task_runner.py:1
Traceback (most recent call last):
  File "/x/zookeeper.py", line 48, in get_conn
    raise AirflowException(
airflow.sdk.exceptions.AirflowException: cannot reach ZooKeeper at zk1:2181 (connection 'zk'): timed out
2026-01-01T00:00:00.000003Z [info     ] [DAG TEST] end task task_id=snapshot map_index=-1 [airflow.sdk] loc=dag.py:2
2026-01-01T00:00:00.000004Z [info     ] [DAG TEST] starting task_id=summary map_index=-1 [airflow.sdk] loc=dag.py:1
2026-01-01T00:00:00.000005Z [error    ] Task failed with exception     [task] loc=task_runner.py:1
Traceback (most recent call last):
  File "/x/dag.py", line 104, in publish_summary
airflow.sdk.exceptions.AirflowFailException: no snapshot was taken; see the snapshot task's log
"""


def test_the_run_says_when_each_task_starts_and_ends_with_its_duration():
    """``kafka-zk-audit run`` reads Airflow's log as it comes (``TaskProgress``, the same lines in run 2 of the
    shared system run: tests/system/test_cli_run.py): a mapped task by its cluster, a failed one as failed."""
    import io

    from kafka_zk_audit.cli.runner import TaskProgress

    ticks = iter(range(0, 100, 2))
    out = io.StringIO()
    progress = TaskProgress(["alpha"], out=out, clock=lambda: float(next(ticks)), stamp=lambda: "12:00:00")
    mapped = LOG_OF_A_FAILED_SNAPSHOT.replace("map_index=-1 [airflow.sdk] loc=dag.py:1", "map_index=0 x", 1)
    mapped = mapped.replace("snapshot map_index=-1 [airflow.sdk] loc=dag.py:2", "snapshot map_index=0 x", 1)
    skipped = ("[DAG TEST] starting task_id=history map_index=1\n[info] Skipping task. reason=no files\n"
               "[DAG TEST] end task task_id=history map_index=1\n")
    for line in (mapped + skipped).splitlines(keepends=True):
        progress(line)
    assert out.getvalue().splitlines() == [
        "[12:00:00] snapshot[alpha] started", "[12:00:00] snapshot[alpha] failed after 2.0s",
        "[12:00:00] summary started",  # its end is not in this log
        "[12:00:00] history[1] started", "[12:00:00] history[1] skipped after 2.0s"]


def test_the_first_failed_task_and_its_error_come_from_the_log():
    failure = first_failed_task(LOG_OF_A_FAILED_SNAPSHOT)
    assert failure is not None and failure.task_id == "snapshot"
    assert failure.error == "AirflowException: cannot reach ZooKeeper at zk1:2181 (connection 'zk'): timed out"
    assert first_failed_task(LOG_OF_A_FAILED_SNAPSHOT.replace("Task failed with exception", "Task finished")) is None


def test_fleet_targets_are_named_name_equals_value():
    from kafka_zk_audit.cli.common import named

    assert named("eu=zk1:2181,zk2:2181/kafka") == ("eu", "zk1:2181,zk2:2181/kafka")
    assert named("zk1:2181/kafka") == (None, "zk1:2181/kafka")
    assert named("prod.us-1=zookeeper_prod_us") == ("prod.us-1", "zookeeper_prod_us")
    assert named("zookeeper_prod") == (None, "zookeeper_prod")


def test_a_dead_cluster_of_a_command_line_fleet_is_audited_with_the_others(zk_server, capsys):
    """``run --zk a=… --zk dead=…`` does not refuse the run: the dead cluster goes to the DAG like the others, which
    reports it by name as not audited (tests/system/test_fleet.py) and exits non-zero; a lone dead --zk and a
    malformed one are still refused before Airflow starts (test_usage_and_connection_errors_exit_2)."""
    import argparse

    from kafka_zk_audit.cli.main import _targets

    dead = f"127.0.0.1:{free_port()}"
    connections: dict = {}
    args = argparse.Namespace(zk=[f"live={zk_server.hosts}", f"dead={dead}"], conn_id=[], from_files=None,
                              cluster=None)
    clusters, problem = _targets(args, connections)
    assert problem is None
    assert [c["name"] for c in clusters] == ["live", "dead"]
    assert {connections[c["zk_conn_id"]]["host"] for c in clusters} == {zk_server.hosts, dead}
    assert f"cluster dead: cannot reach ZooKeeper at {dead}" in capsys.readouterr().err
    malformed = argparse.Namespace(zk=[f"live={zk_server.hosts}", "dead=nohostport"], conn_id=[], from_files=None,
                                   cluster=None)
    assert _targets(malformed, {})[1] == "--zk must be [NAME=]HOST:PORT[,HOST:PORT...][/chroot], not 'nohostport'"


def test_unnamed_fleet_targets_are_named_after_their_address(zk_server, capsys, tmp_path):
    """``run --zk HOST:PORT/…/alpha --zk HOST:PORT/beta --zk DEAD:PORT``: the clusters are ``alpha``, ``beta`` and
    the dead one ``HOST-PORT`` (the names of the cluster column, the snapshot ids and the baselines; the DAG writes
    the settings' names into every table: tests/system/test_fleet.py); the run's first line prints them."""
    import argparse

    from kazoo.client import KazooClient

    from kafka_zk_audit.cli.main import _described, _targets

    admin = KazooClient(hosts=zk_server.hosts)
    admin.start(timeout=15)
    try:
        for chroot in ("/cli_names/kafka/alpha", "/cli_names/beta"):
            admin.ensure_path(chroot)
    finally:
        admin.stop()
        admin.close()
    port = free_port()
    connections: dict = {}
    args = argparse.Namespace(zk=[f"{zk_server.hosts}/cli_names/kafka/alpha", f"{zk_server.hosts}/cli_names/beta",
                                  f"127.0.0.1:{port}"], conn_id=[], from_files=None, cluster=None)
    clusters, problem = _targets(args, connections)
    assert problem is None
    assert [c["name"] for c in clusters] == ["alpha", "beta", f"127.0.0.1-{port}"]
    assert f"cluster 127.0.0.1-{port}: cannot reach ZooKeeper at 127.0.0.1:{port}" in capsys.readouterr().err
    assert _described(clusters[1], connections) == f"beta ({zk_server.hosts}/cli_names/beta)"
    # the run's settings file names them so, and the DAG's clusters task plans them so (its snapshot tasks, the
    # cluster column and the fleet summary take these names: tests/system/test_fleet.py)
    from kafka_zk_audit.cli.main import _run_settings
    from kafka_zk_audit.contract.settings import load_config
    from kafka_zk_audit.snapshot.targets import plan_targets

    settings = load_config(_run_settings(None, clusters, tmp_path, "run0001"))
    planned = plan_targets(settings, "zookeeper_default", {})
    assert [(t["cluster"], t["zk_conn_id"]) for t in planned] == [
        ("alpha", "kafka_zk_audit_cli_0"), ("beta", "kafka_zk_audit_cli_1"),
        (f"127.0.0.1-{port}", "kafka_zk_audit_cli_2")]


def test_derived_names_are_valid_cluster_names_and_unique():
    import argparse

    from kafka_zk_audit.cli.common import cluster_name_problem, name_from_address, unique_names
    from kafka_zk_audit.cli.main import _targets

    assert name_from_address("zk1:2181,zk2:2181/kafka/alpha") == "alpha"
    assert name_from_address("zk1:2181/kafka/alpha/") == "alpha"
    assert name_from_address("127.0.0.1:2181") == "127.0.0.1-2181"
    assert name_from_address("zk1:2181,zk2:2181/") == "zk1-2181"
    assert name_from_address("[::1]:2181/ka fka!") == "ka-fka"
    assert name_from_address("[::1]:2181") == "1-2181"
    assert name_from_address("zookeeper_prod") == "zookeeper_prod"  # a connection id names itself
    assert all(cluster_name_problem(name_from_address(a)) is None for a in ("h:1/" + "x" * 99, "h:1/-_.a", "h:1"))
    assert unique_names([None, None, "kafka", None], ["kafka", "kafka", "x", "kafka-2"]) == [
        "kafka-2", "kafka-3", "kafka", "kafka-2-2"]
    assert cluster_name_problem("a b") and cluster_name_problem("-a") and cluster_name_problem("prod.eu-1") is None

    def targets(zk=(), conn_id=(), cluster=None, from_files=None):
        args = argparse.Namespace(zk=list(zk), conn_id=list(conn_id), cluster=cluster, from_files=from_files)
        return _targets(args, {})

    assert [c["name"] for c in targets(zk=["h:1/a", "h:2/a"], from_files="x")[0]] == ["a", "a-2"]
    assert [c["name"] for c in targets(zk=["a=h:1/x", "h:2/a"], from_files="x")[0]] == ["a", "a-2"]
    assert [c["name"] for c in targets(conn_id=["zk_eu", "zk_us"])[0]] == ["zk_eu", "zk_us"]
    assert targets(zk=["h:1/a"], from_files="x")[0][0]["name"] == "a"  # a lone unnamed target too
    assert targets(conn_id=["zk_eu"])[0][0]["name"] == "zk_eu"
    assert targets(zk=["h:1/a"], cluster="shop", from_files="x")[0][0]["name"] == "shop"
    twice = targets(zk=["eu=h:1/a"], cluster="shop", from_files="x")[1]
    assert twice == "the cluster is named twice: eu= and --cluster shop"
    assert targets(zk=["h:1", "h:2"], cluster="shop")[1].startswith("--cluster names the run's one cluster")
    assert targets(cluster="shop")[1].startswith("--cluster names the cluster of a --from-files or --from-kraft run")
    files = targets(cluster="shop", from_files="s3://bucket/zk/")[0]
    assert files == [{"name": "shop", "files": {"data_dir": "s3://bucket/zk/"}}]
    kraft = _targets(argparse.Namespace(zk=[], conn_id=[], cluster="pay", from_files=None,
                                        from_kraft="s3://bucket/kraft/"), {})[0]
    assert kraft == [{"name": "pay", "kraft": {"metadata_dir": "s3://bucket/kraft/"}}]


def test_from_kraft_becomes_the_dags_params_and_each_source_turns_the_other_kind_away(tmp_path):
    """``run --from-kraft DIR [--at-offset N]`` → the DAG params from_kraft (made absolute) and at_offset; a
    ZooKeeper dataDir given to --from-kraft, or a KRaft directory to --from-files, is named with the option that
    reads it."""
    import argparse

    from kafka_zk_audit.cli.main import _files_params
    from kafka_zk_audit_testing.kraft_logs import KraftCluster

    kraft = KraftCluster().write(tmp_path / "kraft")
    zookeeper = tmp_path / "zk" / "version-2"
    zookeeper.mkdir(parents=True)
    (zookeeper / "snapshot.0").write_bytes(b"")

    def params(**given):
        fields = {"from_files": None, "from_kraft": None, "at_zxid": None, "at_time": None, "at_offset": None}
        return _files_params(argparse.Namespace(**{**fields, **given}), 1)

    assert params(from_kraft=str(kraft), at_offset="12") == ({"from_kraft": str(kraft.resolve()), "at_offset": 12},
                                                             None)
    assert params(from_kraft=str(zookeeper.parent))[1].endswith("this is a ZooKeeper data dir (version-2/snapshot.*, "
                                                                "log.*): read it with --from-files")
    assert params(from_files=str(kraft))[1].endswith("read it with --from-kraft")
    assert "--at-offset goes with --from-kraft" in params(at_offset="3")[1]
    assert "a KRaft log takes --at-offset" in params(from_kraft=str(kraft), at_zxid="0x5")[1]
    assert "not both" in params(from_kraft=str(kraft), at_offset="1", at_time="2026-11-01T00:00:00")[1]
    assert "exclude each other" in params(from_kraft=str(kraft), from_files=str(zookeeper))[1]
    assert "no such directory" in params(from_kraft=str(tmp_path / "nothing"))[1]


def test_the_command_lines_clusters_replace_those_of_the_settings_file(tmp_path, monkeypatch):
    """``run --config FILE --zk a=… --zk b=…``: the run's settings are the file's, with the command line's clusters
    (and their connections, digest auth from $KAFKA_ZK_AUDIT_ZK_AUTH) instead of the file's."""
    import json

    import yaml

    from kafka_zk_audit.cli.main import _run_settings, _zookeeper_connection
    from kafka_zk_audit.cli.runner import airflow_env

    monkeypatch.setenv("KAFKA_ZK_AUDIT_ZK_AUTH", "digest:kafka:pw-from-env")
    connections: dict = {}
    assert _zookeeper_connection("127.0.0.1:2181,127.0.0.1:2182/kafka", "cli_a", connections, reachable=False) is None
    assert connections["cli_a"] == {"conn_type": "zookeeper", "host": "127.0.0.1:2181,127.0.0.1:2182",
                                    "extra": {"chroot": "/kafka", "auth": "digest:kafka:pw-from-env"}}
    settings = tmp_path / "mine.yaml"
    settings.write_text("clusters:\n  - {name: old, zk_conn_id: zk_old}\nretention: {keep_snapshots: 3}\n")
    path = _run_settings(str(settings), [{"name": "a", "zk_conn_id": "cli_a"}], tmp_path / "run", "run0001")
    assert path == str(tmp_path / "run" / "kafka-zk-audit-run0001.yaml")
    assert yaml.safe_load(Path(path).read_text()) == {
        "clusters": [{"name": "a", "zk_conn_id": "cli_a"}], "retention": {"keep_snapshots": 3}}
    assert _run_settings(str(settings), [], tmp_path / "run", "run0002") == str(settings.resolve())
    env = airflow_env(airflow_home=tmp_path / "home", connections=connections, base={})
    assert json.loads(env["AIRFLOW_CONN_CLI_A"])["extra"]["auth"] == "digest:kafka:pw-from-env"


# after the tests that the lone dead cluster's pre-flight overlaps
def test_usage_and_connection_errors_exit_2(lone_dead_cluster_run, cli_env, capsys, monkeypatch):
    def run(args: list[str], env: dict[str, str] | None = None) -> Ran:
        return run_main(args, capsys, monkeypatch, {"AIRFLOW_HOME": cli_env["AIRFLOW_HOME"], **(env or {})})

    usage = run(["run"])
    assert usage.returncode == 2 and "--zk" in usage.stderr
    bad = run(["run", "--zk", "no-port-here"])
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr
    call, port, folder = lone_dead_cluster_run
    down = call.result()
    assert down.returncode == 2, down.stderr
    assert f"cannot reach ZooKeeper at 127.0.0.1:{port}" in down.stderr and "ensemble is up" in down.stderr
    bad_auth = run(["run", "--zk", f"127.0.0.1:{free_port()}"], {"KAFKA_ZK_AUDIT_ZK_AUTH": "oops"})
    assert bad_auth.returncode == 2 and "digest:USER:PASSWORD" in bad_auth.stderr
    # no Airflow was started for any of these
    assert not Path(cli_env["AIRFLOW_HOME"]).exists() and not (folder / "airflow").exists()


def test_bad_settings_file_exits_2_naming_key_and_line_before_airflow_starts(cli_env, tmp_path, capsys, monkeypatch):
    def run(args: list[str]) -> Ran:
        return run_main(args, capsys, monkeypatch, {"AIRFLOW_HOME": cli_env["AIRFLOW_HOME"]})

    settings = tmp_path / "audit.yaml"
    settings.write_text("# my overrides\nsla:\n  reassignment: 6h\n  preferred_election: soon\n"
                        "severity_overrides:\n  leader_in_isr: warning\n")
    # an unreachable ZooKeeper too: the settings are checked first, so only they are reported
    result = run(["run", "--zk", f"127.0.0.1:{free_port()}", "--config", str(settings)])
    assert result.returncode == 2, result.stderr
    assert f"{settings}, line 4: 'sla.preferred_election' is 'soon'" in result.stderr
    assert f"{settings}, line 6: 'severity_overrides.leader_in_isr'" in result.stderr
    assert "not a check id" in result.stderr and "cannot reach ZooKeeper" not in result.stderr
    assert "Airflow log:" not in result.stderr and not Path(cli_env["AIRFLOW_HOME"]).exists()
    missing = run(["run", "--zk", f"127.0.0.1:{free_port()}", "--config", str(tmp_path / "nope.yaml")])
    assert missing.returncode == 2 and "nope.yaml: cannot read it" in missing.stderr
