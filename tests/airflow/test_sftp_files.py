"""ZooKeeper's files over SFTP: a real OpenSSH server on 127.0.0.1, an Airflow connection with a key file, the
fetch of a real ZooKeeper dataDir, and a rebuild from the fetched copy equal to one from the original."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_zk_audit.airflow.hooks.zookeeper_files import sftp_zookeeper_files
from kafka_zk_audit.snapshot.files.replay import rebuild_tree
from kafka_zk_audit.snapshot.files.sources import FilesSourceError
from kafka_zk_audit_testing.zk_server import free_port

SSHD = "/usr/sbin/sshd"

def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """OpenSSH's server as the current user on a free loopback port, with a temp host key and one client key."""
    folder = tmp_path_factory.mktemp("sshd")
    _keygen(folder / "host_key")
    _keygen(folder / "client_key")
    shutil.copy(folder / "client_key.pub", folder / "authorized_keys")
    port = free_port()
    config = folder / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {folder / 'host_key'}",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}", "StrictModes no", "UsePAM no",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
        f"PidFile {folder / 'sshd.pid'}", "Subsystem sftp internal-sftp", "",
    ]))
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory, needed when run as root
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL,
                            stderr=open(folder / "sshd.log", "wb"))
    deadline = time.monotonic() + 20
    while not (folder / "sshd.pid").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"sshd did not start: {(folder / 'sshd.log').read_text()}")
        time.sleep(0.05)
    yield {"port": port, "key_file": str(folder / "client_key")}
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def sftp_conn(sshd, monkeypatch) -> str:
    """An Airflow SFTP connection (env var, JSON) with the key file in its extras: no password anywhere."""
    import getpass

    conn = {"conn_type": "sftp", "host": "127.0.0.1", "port": sshd["port"], "login": getpass.getuser(),
            "extra": {"key_file": sshd["key_file"], "no_host_key_check": True}}
    monkeypatch.setenv("AIRFLOW_CONN_ZK_FILES_SFTP", json.dumps(conn))
    return "zk_files_sftp"


def test_sftp_fetch_rebuilds_the_same_tree_as_the_original(sftp_conn, zookeeper_data, sshd, caplog):
    caplog.set_level(logging.DEBUG)
    version_dir = zookeeper_data / "version-2"
    with sftp_zookeeper_files(sftp_conn, str(zookeeper_data)) as staged:
        staged_dir = Path(staged.data_dir) / "version-2"
        fetched = sorted(p.name for p in staged_dir.iterdir())
        assert fetched == sorted(staged.fetched)
        assert any(n.startswith("snapshot.") for n in fetched) and any(n.startswith("log.") for n in fetched)
        assert staged.origin == f"{sftp_conn}:{zookeeper_data}"
        assert staged.bytes < sum(p.stat().st_size for p in version_dir.iterdir())  # no preallocated zeros
        from_sftp = rebuild_tree(staged.data_dir)
    assert not Path(staged.data_dir).exists()
    original = rebuild_tree(zookeeper_data)
    assert from_sftp.zxid == original.zxid and from_sftp.nodes == original.nodes
    assert "/brokers/ids" in original.nodes and len(original.nodes) > 50
    private_key = Path(sshd["key_file"]).read_text().splitlines()[1]
    assert private_key not in caplog.text


def test_a_missing_remote_folder_says_so(sftp_conn, tmp_path):
    with pytest.raises(FilesSourceError, match="no such directory"):
        with sftp_zookeeper_files(sftp_conn, str(tmp_path / "absent")):
            pass


def test_a_kraft_metadata_dir_over_sftp_replays_to_the_same_image(sftp_conn, tmp_path):
    """The KRaft source over the same SFTP connection: only the log, the checkpoints and the root's small files are
    fetched, and the image equals the one from the original folder."""
    from kafka_zk_audit.airflow.hooks.zookeeper_files import cluster_kraft_files
    from kafka_zk_audit.snapshot.kraft.replay import replay_directory
    from kafka_zk_audit_testing.kraft_logs import KraftCluster

    root = KraftCluster().write(tmp_path / "metadata")
    (root / "__cluster_metadata-0" / "00000000000000000000.index").write_bytes(b"\0" * 4096)  # not fetched
    with cluster_kraft_files({"metadata_dir": str(root), "sftp_conn_id": sftp_conn}) as staged:
        assert staged.origin == f"{sftp_conn}:{root}"
        assert sorted(staged.fetched) == sorted(
            [p.name for p in (root / "__cluster_metadata-0").glob("*.log")]
            + ["quorum-state", "meta.properties", "bootstrap.checkpoint"])
        fetched = replay_directory(staged.data_dir).builder.image
    original = replay_directory(root).builder.image
    assert (fetched.last_offset, fetched.topics.keys(), fetched.partitions.keys()) == \
        (original.last_offset, original.topics.keys(), original.partitions.keys())
    with pytest.raises(FilesSourceError, match="no KRaft metadata log here"):
        with cluster_kraft_files({"metadata_dir": str(tmp_path), "sftp_conn_id": sftp_conn}):
            pass
