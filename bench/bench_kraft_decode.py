"""Decoding KRaft metadata logs: records per second on the real logs and on a generated million-record log.

    .venv/bin/python bench/bench_kraft_decode.py [--records 1000000] [--repeat 3] [--real DIR]

Real logs: every ``*.log`` of ``--real`` (default ``../shared/real-data/kraft``) of 4,000 records or more, each read
``--repeat`` times with ``segments.read_log`` (batches walked, CRC-32C checked, records decoded). Generated log: built
with the codec's own writer like a busy cluster's (``--records`` records: 85 % NoOpRecord alone in its batch, as the
controller's heartbeat writes them, 14 % PartitionChangeRecord in batches of 10, 1 % Partition/Topic/Config/
BrokerRegistrationChange), written to a segment, then read the same way and replayed through ``metadata_dir``'s plan.
Prints the best CPU seconds and records per second of each; nothing is asserted.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from kafka_zk_audit.snapshot.kraft.batches import build_batch
from kafka_zk_audit.snapshot.kraft.metadata_dir import plan_replay
from kafka_zk_audit.snapshot.kraft.segments import read_log, write_segment

DEFAULT_REAL = Path(__file__).resolve().parents[2] / "shared" / "real-data" / "kraft"
START = 1_775_000_000_000
# batch kinds by share of batches, so that records are 85 % NoOp, 14 % PartitionChange (10 a batch), 1 % others
NOOP_BATCHES = 85 / 87.4
CHANGE_BATCHES = (85 + 1.4) / 87.4


def best_cpu(run: Callable[[], int], repeat: int) -> tuple[float, int]:
    """The lowest CPU seconds of ``repeat`` runs, and what the run counted."""
    best, counted = float("inf"), 0
    for _ in range(repeat):
        started = time.process_time()
        counted = run()
        best = min(best, time.process_time() - started)
    return best, counted


def topic_id(index: int) -> str:
    return f"{index:021d}A"[-22:].replace("0", "A")


def generated_batches(records: int, seed: int = 7) -> Iterator[bytes]:
    """Batches of about ``records`` records, the mix of the module docstring, at consecutive offsets."""
    rng = random.Random(seed)
    offset, epoch = 0, 1
    topics = [topic_id(index) for index in range(50)]
    while offset < records:
        timestamp = START + offset * 500
        roll = rng.random()
        if roll < NOOP_BATCHES:
            batch = [(20, 0, {})]
        elif roll < CHANGE_BATCHES:
            batch = [(5, 0, {"PartitionId": rng.randrange(50), "TopicId": rng.choice(topics),
                             "Isr": rng.sample(range(1, 6), 3), "Leader": rng.randrange(1, 6)}) for _ in range(10)]
        else:
            batch = [rng.choice([
                (3, 1, {"PartitionId": rng.randrange(50), "TopicId": rng.choice(topics), "Replicas": [1, 2, 3],
                        "Isr": [1, 2, 3], "RemovingReplicas": [], "AddingReplicas": [], "Leader": 1,
                        "LeaderEpoch": 0, "PartitionEpoch": 0, "Directories": [topics[0]] * 3}),
                (2, 0, {"Name": f"topic-{offset}", "TopicId": rng.choice(topics)}),
                (4, 0, {"ResourceType": 2, "ResourceName": "orders", "Name": "retention.ms", "Value": "604800000"}),
                (17, 1, {"BrokerId": rng.randrange(1, 6), "BrokerEpoch": offset, "Fenced": -1}),
            ])]
        yield build_batch(batch, offset, epoch, timestamp)
        offset += len(batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--real", type=Path, default=DEFAULT_REAL)
    args = parser.parse_args()

    for path in sorted(args.real.rglob("*.log")) if args.real.is_dir() else []:
        seconds, count = best_cpu(lambda path=path: sum(1 for _ in read_log(path)), args.repeat)
        if count >= 4000:
            print(f"{path.relative_to(args.real)}: {count} records, {seconds:.3f} CPU s, {count / seconds:,.0f} "
                  f"records/s ({seconds / count * 1e6:.2f} µs a record)")

    with tempfile.TemporaryDirectory() as work:
        partition = Path(work) / "__cluster_metadata-0"
        started = time.process_time()
        segment = write_segment(partition, generated_batches(args.records))
        built = time.process_time() - started
        size = segment.stat().st_size
        print(f"generated {args.records:,} records ({size / 2**20:.1f} MiB) in {built:.1f} CPU s")
        seconds, count = best_cpu(lambda: sum(1 for _ in read_log(segment)), args.repeat)
        print(f"read_log: {count:,} records, {seconds:.2f} CPU s, {count / seconds:,.0f} records/s "
              f"({seconds / count * 1e6:.2f} µs a record)")
        seconds, count = best_cpu(lambda: sum(1 for _ in plan_replay(work).records()), args.repeat)
        print(f"plan_replay(...).records(): {count:,} records, {seconds:.2f} CPU s, {count / seconds:,.0f} records/s")


if __name__ == "__main__":
    main()
