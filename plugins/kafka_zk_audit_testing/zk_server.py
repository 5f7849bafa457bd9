"""Run a standalone ZooKeeper server (Debian's ``zookeeper`` package) on loopback.

Used by ``make demo``, the test session and the benchmarks. The server gets its own data dir,
listens on 127.0.0.1 only, has the admin server off and the four-letter words on, and is stopped
by the pid recorded in its data dir.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ZooKeeperServer:
    """One standalone server: its data dir holds zoo.cfg, the data, the log and the pid."""

    data_dir: Path
    port: int = 2181
    host: str = "127.0.0.1"
    heap_mb: int = 512

    @property
    def hosts(self) -> str:
        return f"{self.host}:{self.port}"

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
                    "",
                ]
            )
        )
        return cfg

    def is_serving(self) -> bool:
        """True once ``srvr`` answers with a mode: unlike ``ruok``, only after the data is loaded."""
        try:
            return "Mode:" in four_letter_word(self.host, self.port, "srvr")
        except OSError:
            return False

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        missing = [jar for jar in ZOOKEEPER_JARS if not Path(jar).exists()]
        if missing:
            raise RuntimeError(f"ZooKeeper is not installed ({', '.join(missing)} missing); {INSTALL_HINT}")
        if self.is_serving():
            raise RuntimeError(f"something already serves ZooKeeper on {self.hosts}; stop it or pick another port")
        cfg = self.write_config()
        cmd = ["java", f"-Xmx{self.heap_mb}m", "-cp", ":".join(ZOOKEEPER_JARS), MAIN_CLASS, str(cfg)]
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid_file.write_text(str(proc.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with {proc.returncode}; see {self.log_file}")
            if self.is_serving():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"ZooKeeper did not answer srvr on {self.hosts} within {timeout:.0f}s; see {self.log_file}")

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the server by its recorded pid (SIGTERM, then SIGKILL)."""
        if not self.pid_file.exists():
            return
        pid = int(self.pid_file.read_text())
        try:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                os.kill(pid, 0)
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                time.sleep(0.1)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.pid_file.unlink(missing_ok=True)


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
