"""Reading a copied ZooKeeper transaction log: this tree against a baseline, in one run.

    .venv/bin/python bench/bench_txnlog_tail.py [--baseline-tree DIR] [--znodes 200] [--repeat 5]

ZooKeeper preallocates each log to 64 MiB of zeros and writes its records at the front. On the server the tail is a
hole of the sparse file, which the reader skips (SEEK_DATA/SEEK_HOLE); a log fetched over SFTP or from a backup has
no hole, and the reader checks every byte of the tail is zero (a non-zero byte after the end means a corrupt log).

A private ZooKeeper on 127.0.0.1 gets ``--znodes`` creates and is stopped; its log is copied byte for byte (no hole)
and read with ``txnlog.iter_txns`` ``--repeat`` times, in a process whose ``kafka_zk_audit`` is this checkout, then
``--baseline-tree``'s (a checkout of an older commit). Prints the median milliseconds per log of each, their ratio,
and whether both read the same txns. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from profile_audit import tree_env

READ = """
import json, statistics, sys, time
from pathlib import Path
from kafka_zk_audit.snapshot.files.txnlog import iter_txns
path, repeat = Path(sys.argv[1]), int(sys.argv[2])
seconds, zxids = [], []
for _ in range(repeat):
    started = time.perf_counter()
    zxids = [txn.zxid for txn in iter_txns(path)]
    seconds.append(time.perf_counter() - started)
print(json.dumps({"ms": statistics.median(seconds) * 1000, "zxids": zxids}))
"""


def write_log(work: Path, znodes: int) -> Path:
    """A real server's log after ``znodes`` creates, copied without holes."""
    from kazoo.client import KazooClient

    from kafka_zk_audit_testing.zk_server import ZooKeeperServer, free_port

    server = ZooKeeperServer(work / "zk", port=free_port()).start()
    try:
        client = KazooClient(hosts=server.hosts)
        client.start(timeout=30)
        for index in range(znodes):
            client.create(f"/bench/node-{index:05d}", b"x" * 100, makepath=True)
        client.stop()
        client.close()
    finally:
        server.stop()
    [log] = sorted((server.data_dir / "data" / "version-2").glob("log.*"))
    copied = work / log.name
    copied.write_bytes(log.read_bytes())  # every byte written: no hole
    return copied


def read_with(tree: Path | None, log: Path, repeat: int) -> dict:
    """The median and the txns' zxids of reading ``log`` in a process whose package is ``tree``'s (None: this
    checkout's)."""
    done = subprocess.run([sys.executable, "-c", READ, str(log), str(repeat)], env=tree_env(tree),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-tree", type=Path, default=None)
    parser.add_argument("--znodes", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kafka-zk-audit-bench-txnlog-") as work:
        log = write_log(Path(work), args.znodes)
        print(f"{log.name}: {log.stat().st_size / 2**20:.0f} MiB, copied without holes; median of {args.repeat}")
        this = read_with(None, log, args.repeat)
        print(f"  this tree: {this['ms']:.1f} ms per log, {len(this['zxids'])} txns")
        if args.baseline_tree is not None:
            base = read_with(args.baseline_tree.resolve(), log, args.repeat)
            print(f"  baseline:  {base['ms']:.1f} ms per log, {len(base['zxids'])} txns")
            print(f"  ratio this/baseline: {this['ms'] / base['ms']:.2f}; the same txns: "
                  f"{this['zxids'] == base['zxids']}")


if __name__ == "__main__":
    main()
