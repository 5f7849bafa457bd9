"""``kafka-zk-audit run --from-files DIR``: what the command line refuses and what it hands the DAG."""

from __future__ import annotations

from pathlib import Path

from tests.cli.console_script import airflow_home_env, cli
from tests.cli.in_process import run_main


def test_usage_errors_of_from_files_exit_2(tmp_path, capsys, monkeypatch):
    env = airflow_home_env(tmp_path)
    secret = cli(["run", "--from-files", "https://auditor:pw-in-url@127.0.0.1:1/zk/"], env)  # as a user runs it
    assert secret.returncode == 2 and "carries a password" in secret.stderr and "pw-in-url" not in secret.stderr
    missing = run_main(["run", "--from-files", str(tmp_path / "absent")], capsys, monkeypatch,
                       {"AIRFLOW_HOME": env["AIRFLOW_HOME"]})
    assert missing.returncode == 2 and "no such directory" in missing.stderr
    zxid = run_main(["run", "--from-files", str(tmp_path), "--at-zxid", "zero"], capsys, monkeypatch,
                    {"AIRFLOW_HOME": env["AIRFLOW_HOME"]})
    assert zxid.returncode == 2 and "at_zxid 'zero'" in zxid.stderr
    named = run_main(["run", "--from-files", str(tmp_path), "--cluster", "shop floor"], capsys, monkeypatch,
                     {"AIRFLOW_HOME": env["AIRFLOW_HOME"]})
    assert named.returncode == 2 and "--cluster: cluster name 'shop floor'" in named.stderr
    assert not Path(env["AIRFLOW_HOME"]).exists()


def test_from_files_becomes_the_runs_files_params(tmp_path):
    """What ``run --from-files`` hands the DAG (the whole run on a cluster's files: tests/system/test_files_dag.py;
    the rebuilt rows against a live walk: tests/snapshot/files/test_rebuild.py)."""
    import argparse

    from kafka_zk_audit.cli.main import _files_params

    def args(**given):
        return argparse.Namespace(**{"from_files": None, "at_zxid": None, "at_time": None, **given})

    params, problem = _files_params(args(from_files=str(tmp_path), at_zxid="0x1f"), 1)
    assert problem is None and params == {"from_files": str(tmp_path.resolve()), "at_zxid": 0x1F}
    params, problem = _files_params(args(from_files="s3://bucket/zk/", at_time="2026-11-01T00:00:00"), 1)
    assert problem is None and params["from_files"] == "s3://bucket/zk/"
    assert params["at_time"].startswith("2026-11-01T00:00:00")
    assert _files_params(args(from_files=str(tmp_path)), 2)[1].startswith("--from-files names one cluster's files")
    assert _files_params(args(at_zxid="1", at_time="2026-11-01"), 1)[1] == "give --at-zxid or --at-time, not both"
