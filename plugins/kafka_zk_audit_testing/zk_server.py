"""Run ZooKeeper (Debian's ``zookeeper`` package) on loopback: a standalone server or a 3-server ensemble.

Used by ``make demo``, the test session, the fault tests and the benchmarks. Each server gets its
own data dir, listens on 127.0.0.1 only, has the admin server off and the four-letter words on, and
is stopped by the pid recorded in its data dir. An ensemble's servers each have their own client,
quorum and election ports on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka_zk_audit.audit.session import C1_ONLY_JAVA_OPTION
from kafka_zk_audit.contract.process import wait_gone

ZOOKEEPER_JARS = ("/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
INSTALL_HINT = "install it with: bash scripts/install_system.sh (Debian packages zookeeper and a JDK)"


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send a four-letter word (``srvr``, ``ruok``, …) and return the server's answer."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode())
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


# Ports handed out by free_port come from a band below the kernel's ephemeral range (32768+ on Linux), so no
# outgoing connection or bind(0) of any process takes one; each pytest-xdist worker has a band of its own, so two
# workers never hand out the same port; within a process a set (behind a lock, for the threads that start servers
# side by side) never hands out a port twice.
PORT_BAND_START, PORT_BAND_SIZE = 20000, 1500
_handed_out: set[int] = set()
_handing_out = threading.Lock()


def _band() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ... under pytest-xdist
    index = int(worker[2:]) + 1 if worker[:2] == "gw" and worker[2:].isdigit() else 0
    start = PORT_BAND_START + index * PORT_BAND_SIZE
    return range(start, start + PORT_BAND_SIZE)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, never handed out before by this process."""
    band = _band()
    offset = os.getpid() % len(band)  # two independent processes on one band start at different places
    with _handing_out:
        for step in range(len(band)):
            port = band[(offset + step) % len(band)]
            if port in _handed_out:
                continue
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _handed_out.add(port)
            return port
    with socket.socket() as sock:  # the band is used up: any port the kernel gives
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class QuorumPeer:
    """One server of an ensemble as the others know it: its id and its three ports on 127.0.0.1."""

    server_id: int
    client_port: int
    quorum_port: int
    election_port: int
    host: str = "127.0.0.1"

    def config_line(self) -> str:
        return f"server.{self.server_id}={self.host}:{self.quorum_port}:{self.election_port}"


@dataclass
class ZooKeeperServer:
    """One server: its data dir holds zoo.cfg, the data, the log and the pid.

    Standalone unless ``peers`` lists the ensemble (this server included, as ``server_id``).
    """

    data_dir: Path
    port: int = 2181
    host: str = "127.0.0.1"
    heap_mb: int = 512
    server_id: int = 0
    peers: tuple[QuorumPeer, ...] = field(default=())
    jvm_flags: tuple[str, ...] = ()  # extra JVM options, e.g. "-Dzookeeper.snapshot.compression.method=gz"
    extra_config: tuple[str, ...] = ()  # extra zoo.cfg lines (a later line wins), e.g. "snapCount=200"
    # C1 only: a test or demo server lives minutes and serves small trees, where C2's compilations cost more CPU than
    # they save (a start and a small cluster's writes: 0.77 -> 0.59 CPU-s); False under sustained load (the
    # benchmarks' million-znode trees): the full JIT
    c1_only: bool = True

    @property
    def hosts(self) -> str:
        return f"{self.host}:{self.port}"

    def ensure_chroot(self, chroot: str) -> str:
        """Create ``chroot`` (and its parents) if missing; returns the connect string rooted there."""
        from kazoo.client import KazooClient

        admin = KazooClient(hosts=self.hosts)
        admin.start(timeout=15)
        try:
            admin.ensure_path(chroot)
        finally:
            admin.stop()
            admin.close()
        return self.hosts + chroot

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "zookeeper.pid"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "zookeeper.log"

    def write_config(self) -> Path:
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text(
            "\n".join(
                [
                    "tickTime=2000",
                    f"dataDir={self.data_dir / 'data'}",
                    f"clientPort={self.port}",
                    f"clientPortAddress={self.host}",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=*",
                    "maxClientCnxns=0",
                    "jute.maxbuffer=16777216",
                    "autopurge.snapRetainCount=3",
                    "autopurge.purgeInterval=1",
                    *self._quorum_lines(),
                    *self.extra_config,
                    "",
                ]
            )
        )
        return cfg

    def _quorum_lines(self) -> list[str]:
        if not self.peers:
            return []
        (self.data_dir / "data" / "myid").write_text(f"{self.server_id}\n")
        return ["initLimit=10", "syncLimit=5", *(peer.config_line() for peer in self.peers)]

    @property
    def pid(self) -> int | None:
        """The recorded pid of the running server, or None."""
        return int(self.pid_file.read_text()) if self.pid_file.exists() else None

    def mode(self) -> str | None:
        """``standalone``, ``leader`` or ``follower`` from ``srvr``; None when it does not serve."""
        try:
            answer = four_letter_word(self.host, self.port, "srvr")
        except OSError:
            return None
        for line in answer.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def session_ids(self) -> set[int]:
        """The ids of the client sessions connected to this server right now (``cons``)."""
        try:
            answer = four_letter_word(self.host, self.port, "cons")
        except OSError:
            return set()
        return {int(match, 16) for match in re.findall(r"sid=0x([0-9a-f]+)", answer)}

    def is_serving(self) -> bool:
        """True once ``srvr`` answers with a mode: unlike ``ruok``, only after the data is loaded."""
        try:
            return "Mode:" in four_letter_word(self.host, self.port, "srvr")
        except OSError:
            return False

    def launch(self) -> subprocess.Popen:
        """Start the JVM without waiting for it to serve (an ensemble member serves once a quorum is up)."""
        missing = [jar for jar in ZOOKEEPER_JARS if not Path(jar).exists()]
        if missing:
            raise RuntimeError(f"ZooKeeper is not installed ({', '.join(missing)} missing); {INSTALL_HINT}")
        if self.is_serving():
            raise RuntimeError(f"something already serves ZooKeeper on {self.hosts}; stop it or pick another port")
        cfg = self.write_config()
        jit = (C1_ONLY_JAVA_OPTION,) if self.c1_only else ()
        cmd = ["java", f"-Xmx{self.heap_mb}m", *jit, *self.jvm_flags, "-cp", ":".join(ZOOKEEPER_JARS), MAIN_CLASS,
               str(cfg)]
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid_file.write_text(str(proc.pid))
        return proc

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        """Start the server and wait until ``srvr`` answers with a mode."""
        proc = self.launch()
        self.wait_serving(timeout, proc)
        return self

    def wait_serving(self, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> None:
        """Wait until ``srvr`` answers with a mode; stop the server and raise if it does not in time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with {proc.returncode}; see {self.log_file}")
            if self.is_serving():
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"ZooKeeper did not answer srvr on {self.hosts} within {timeout:.0f}s; see {self.log_file}")

    def kill(self) -> None:
        """Kill the server at once (SIGKILL by its recorded pid), as a crash would, and wait until it is gone."""
        self.stop(timeout=0.0, sig=signal.SIGKILL)

    def stop(self, timeout: float = 15.0, sig: int = signal.SIGTERM) -> None:
        """Stop the server by its recorded pid (``sig``, SIGTERM by default, then SIGKILL after ``timeout``)."""
        if not self.pid_file.exists():
            return
        pid = int(self.pid_file.read_text())
        try:
            os.kill(pid, sig)
            if not wait_gone(pid, timeout):
                os.kill(pid, signal.SIGKILL)
                wait_gone(pid, 15.0)
        except ProcessLookupError:
            pass
        self.pid_file.unlink(missing_ok=True)


@dataclass
class ZooKeeperEnsemble:
    """Three (or more) real ZooKeeper servers forming one quorum on 127.0.0.1, each with its own ports."""

    base_dir: Path
    size: int = 3
    heap_mb: int = 256
    servers: list[ZooKeeperServer] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.servers:
            ports = _free_ports(3 * self.size)
            peers = tuple(
                QuorumPeer(i + 1, *ports[3 * i: 3 * i + 3]) for i in range(self.size)
            )
            self.servers = [
                ZooKeeperServer(
                    self.base_dir / f"server{peer.server_id}", port=peer.client_port, heap_mb=self.heap_mb,
                    server_id=peer.server_id, peers=peers,
                )
                for peer in peers
            ]

    @property
    def hosts(self) -> str:
        """The connect string, e.g. ``127.0.0.1:41001,127.0.0.1:41004,127.0.0.1:41007``."""
        return ",".join(server.hosts for server in self.servers)

    def start(self, timeout: float = 90.0) -> ZooKeeperEnsemble:
        """Launch every server, then wait until each answers ``srvr`` with a mode (a quorum has formed)."""
        processes = [server.launch() for server in self.servers]
        try:
            for server, proc in zip(self.servers, processes, strict=True):
                server.wait_serving(timeout, proc)
        except BaseException:
            self.stop()
            raise
        return self

    def serving(self) -> list[ZooKeeperServer]:
        return [server for server in self.servers if server.is_serving()]

    def leader(self) -> ZooKeeperServer | None:
        return next((server for server in self.servers if server.mode() == "leader"), None)

    def server_of_session(self, session_id: int) -> ZooKeeperServer | None:
        """The server a client session is connected to (from each server's ``cons``)."""
        return next((server for server in self.servers if session_id in server.session_ids()), None)

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


def _free_ports(count: int) -> list[int]:
    """``count`` distinct free ports on 127.0.0.1 (held open together so none is handed out twice)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start or stop a local standalone ZooKeeper server.")
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--data-dir", default=".zookeeper", help="server directory (config, data, log, pid)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("KAFKA_ZK_AUDIT_ZK_PORT", "2181")))
    args = parser.parse_args(argv)
    server = ZooKeeperServer(Path(args.data_dir).resolve(), port=args.port)
    if args.action == "start":
        if server.is_serving():
            print(f"ZooKeeper already serving on {server.hosts}")
            return 0
        server.start()
        print(f"ZooKeeper serving on {server.hosts} (pid {server.pid_file.read_text()}, dir {server.data_dir})")
    elif args.action == "stop":
        server.stop()
        print(f"ZooKeeper in {server.data_dir} stopped")
    else:
        serving = server.is_serving()
        print(f"ZooKeeper on {server.hosts}: {'serving' if serving else 'not serving'}")
        return 0 if serving else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
