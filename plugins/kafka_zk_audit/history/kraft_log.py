"""The history of a KRaft cluster, from its metadata log: when each invariant was broken, record by record.

The ZooKeeper history reads what happened between two runs from ZooKeeper's transaction logs; a KRaft cluster's log
holds the same story with the batches' times. Everything the retained files hold is replayed (from offset 0, or the
oldest usable checkpoint) and after each record the partitions it touched are judged as the live checks judge them
(the interval checks of ``history.intervals``, named the same):

- ``interval_leader_not_in_isr``: a partition's leader (>= 0) is not in its ISR;
- ``interval_offline_partition``: its leader is -1, or a broker that is not registered;
- ``interval_under_replicated``: its ISR is smaller than its replication factor (the replicas minus those being
  added, as Kafka counts it);
- ``interval_quorum_leader_missing``: no quorum leader, from the last record of one leader epoch to the LeaderChange
  that starts the next (nothing is written while there is no leader).

Intervals are offsets (``start_zxid``/``end_zxid`` hold the log offsets, so the history's tables and page read as the
ZooKeeper history's) and times; one still open at the end of the log has no end. No Spark: the replay is the scan.
"""

from __future__ import annotations

import time as clock
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_zk_audit.contract.catalogue import BY_ID
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.kraft.image import ImageBuilder, MetadataImage
from kafka_zk_audit.snapshot.kraft.metadata_dir import plan_history
from kafka_zk_audit.snapshot.kraft.replay import replay_plan

PREFIX = "interval_"
PARTITION_CHECKS = ("leader_not_in_isr", "offline_partition", "under_replicated")
QUORUM_CHECK = "quorum_leader_missing"
LEADERSHIP_LISTED = 500
INTERVAL_SCHEMA = pa.schema([
    ("check_id", pa.string()), ("severity", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
    ("group_id", pa.string()), ("broker_id", pa.int32()), ("path", pa.string()), ("detail", pa.string()),
    ("start_zxid", pa.int64()), ("end_zxid", pa.int64()), ("start_time", pa.timestamp("ms", tz="UTC")),
    ("end_time", pa.timestamp("ms", tz="UTC")), ("duration_ms", pa.int64()),
])
PARTITION_RECORDS = ("PartitionRecord", "PartitionChangeRecord", "ClearElrRecord")
BROKER_RECORDS = ("RegisterBrokerRecord", "UnregisterBrokerRecord")
STOPS = ("log_corrupt", "log_truncated")  # where a torn or corrupt segment ended the replay


@dataclass
class Open:
    start_offset: int
    start_time: int
    detail: str
    topic: str | None
    partition: int | None


@dataclass
class IntervalTracker:
    """Watches the image as records apply (``ImageBuilder``'s observer) and keeps the violation intervals."""

    image: MetadataImage
    open: dict[tuple[str, Any], Open] = field(default_factory=dict)
    closed: list[dict[str, Any]] = field(default_factory=list)
    failovers: list[dict[str, Any]] = field(default_factory=list)
    leadership: list[dict[str, Any]] = field(default_factory=list)
    last: tuple[int, int] | None = None  # the offset and time of the newest record seen
    epoch: int | None = None

    def __call__(self, record: Any, offset: int, time: int) -> None:
        name = record.name
        if name == "LeaderChangeMessage":
            self._leader_change(record, offset, time)
        elif name in PARTITION_RECORDS:
            keys = list(self.image.partitions) if name == "ClearElrRecord" else \
                [(record.fields["TopicId"], int(record.fields["PartitionId"]))]
            for key in keys:
                self._judge(key, offset, time)
            if name != "ClearElrRecord":
                self._leadership(keys[0], offset, time)
        elif name == "RemoveTopicRecord":
            for key in [k for k in self.open if k[1][0] == record.fields["TopicId"]]:
                self._close(key, offset, time)
        elif name in BROKER_RECORDS:
            broker = int(record.fields["BrokerId"])
            for key, partition in list(self.image.partitions.items()):
                if partition.leader == broker:
                    self._judge(key, offset, time)
        self.last = (offset, time)

    def _leader_change(self, record: Any, offset: int, time: int) -> None:
        leader = record.fields.get("LeaderId")
        if self.last is not None and self.epoch is not None and record.epoch != self.epoch:
            gap = max(time - self.last[1], 0)
            self.closed.append(self._row(QUORUM_CHECK, None, None, f"no quorum leader between epoch {self.epoch} "
                                         f"and epoch {record.epoch} (leader {leader})", self.last[0], self.last[1],
                                         offset, time))
            self.failovers.append({"broker_id": leader, "epoch": record.epoch, "from_zxid": offset,
                                   "from_time": time, "to_zxid": None, "to_time": None, "gap_ms": gap})
        elif self.epoch is None:
            self.failovers.append({"broker_id": leader, "epoch": record.epoch, "from_zxid": offset,
                                   "from_time": time, "to_zxid": None, "to_time": None, "gap_ms": None})
        if len(self.failovers) > 1 and self.failovers[-2]["to_zxid"] is None:
            self.failovers[-2].update(to_zxid=self.last[0] if self.last else offset,
                                      to_time=self.last[1] if self.last else time)
        self.epoch = record.epoch

    def _judge(self, key: tuple[str, int], offset: int, time: int) -> None:
        partition = self.image.partitions.get(key)
        topic = self.image.topics.get(key[0])
        broken: dict[str, str] = {}
        if partition is not None:
            isr, replicas = partition.isr, partition.replicas
            if partition.leader >= 0 and partition.leader not in isr:
                broken["leader_not_in_isr"] = f"leader {partition.leader} not in isr {isr}"
            if partition.leader == -1:
                broken["offline_partition"] = f"leader is -1 (no leader), isr {isr}"
            elif partition.leader not in self.image.brokers:
                broken["offline_partition"] = f"leader {partition.leader} is not a registered broker"
            factor = len(replicas) - len(set(partition.adding) & set(replicas))
            if len(isr) < factor:
                broken["under_replicated"] = f"isr {isr} has {len(isr)} of {factor} replicas {replicas}"
        for check in PARTITION_CHECKS:
            opened = (check, key) in self.open
            if check in broken and not opened:
                self.open[(check, key)] = Open(offset, time, broken[check], topic.name if topic else key[0], key[1])
            elif opened and check not in broken:
                self._close((check, key), offset, time)

    def _close(self, key: tuple[str, Any], offset: int, time: int) -> None:
        was = self.open.pop(key)
        self.closed.append(self._row(key[0], was.topic, was.partition, was.detail, was.start_offset, was.start_time,
                                     offset, time))

    def _leadership(self, key: tuple[str, int], offset: int, time: int) -> None:
        partition, topic = self.image.partitions.get(key), self.image.topics.get(key[0])
        if partition is None or topic is None or len(self.leadership) >= LEADERSHIP_LISTED:
            return
        self.leadership.append({"topic": topic.name, "partition": key[1], "leader": partition.leader,
                                "leader_epoch": partition.leader_epoch, "isr": str(partition.isr),
                                "from_zxid": offset, "to_zxid": None})

    @staticmethod
    def _row(check: str, topic: str | None, partition: int | None, detail: str, start: int, start_time: int,
             end: int | None, end_time: int | None) -> dict[str, Any]:
        return {"check_id": PREFIX + check, "severity": BY_ID[check].severity, "topic": topic,
                "partition": partition, "group_id": None, "broker_id": None, "path": None, "detail": detail,
                "start_zxid": start, "end_zxid": end, "start_time": start_time, "end_time": end_time,
                "duration_ms": None if end_time is None else max(end_time - start_time, 0)}

    def intervals(self) -> list[dict[str, Any]]:
        """Every interval, the closed ones and those still open at the end of the log."""
        rows = list(self.closed)
        for (check, _), was in self.open.items():
            rows.append(self._row(check, was.topic, was.partition, was.detail, was.start_offset, was.start_time,
                                  None, None))
        return sorted(rows, key=lambda row: (row["start_zxid"], row["check_id"]))


def replay_log_history(metadata_dir: str | Path,
                       progress: Callable[[str], None] | None = None) -> tuple[IntervalTracker, dict[str, Any]]:
    """The intervals of everything the directory's files hold, and what was read (offsets, times, records)."""
    plan = plan_history(metadata_dir)
    builder = ImageBuilder()
    tracker = IntervalTracker(builder.image)
    builder.observer = tracker
    read: list[int] = []  # the first log offset, then the count of log records

    def note(record: Any) -> None:
        tracker.last = (record.offset, record.timestamp)  # NoOps too: a leaderless gap starts at the last record
        read[:] = [read[0] if read else record.offset, (read[1] if read else 0) + 1]

    result = replay_plan(plan, builder, on_log_record=note)
    errors = [{"file": anomaly.subject, "after_zxid": tracker.last[0] if tracker.last else None,
               "error": anomaly.detail} for anomaly in builder.image.anomalies if anomaly.kind in STOPS]
    if progress is not None:
        progress(f"replayed {result.records:,} records of {metadata_dir}")
    span = {"first_zxid": read[0] if read else None, "last_zxid": tracker.last[0] if tracker.last else None,
            "records": read[1] if read else 0, "first_time": None,
            "last_time": tracker.last[1] if tracker.last else None, "log_errors": errors,
            "checkpoint": plan.checkpoint.path.name if plan.checkpoint else None}
    return tracker, span


def write_kraft_history(warehouse: Warehouse, metadata_dir: str, *, history_id: str, cluster: str | None = None,
                        min_interval_ms: int = 1_000, origin: str | None = None,
                        from_offset: int | None = None) -> dict[str, Any] | None:
    """Build the history of the metadata log in ``metadata_dir`` into ``history/<id>/`` (the ZooKeeper history's
    tables, page and ``history.json``); returns the summary. With ``from_offset`` (the previous history's last offset
    + 1) the whole log is still replayed, for the state, but only the intervals still open at that offset or started
    after it are listed, so consecutive histories neither miss nor repeat one. None (nothing written) when the log
    holds no record from ``from_offset`` on."""
    from kafka_zk_audit.history.job import history_dir, links_for, publish_in_data_docs, timeline_page

    started = clock.monotonic()
    tracker, span = replay_log_history(metadata_dir)
    if from_offset is not None and (span["last_zxid"] is None or span["last_zxid"] < from_offset):
        return None
    root = history_dir(warehouse, history_id)
    rows = [row for row in tracker.intervals()
            if from_offset is None or row["end_zxid"] is None or row["end_zxid"] >= from_offset]
    listed = [row for row in rows if row["duration_ms"] is None or row["duration_ms"] >= min_interval_ms]
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        entry = counts.setdefault(row["check_id"], {"listed": 0, "short": 0})
        entry["listed" if row in listed else "short"] += 1
    warehouse.fs.makedirs(warehouse.fs_path(f"{root}/intervals"), exist_ok=True)
    with warehouse.fs.open(warehouse.fs_path(f"{root}/intervals/part-00000.parquet"), "wb") as sink:
        pq.write_table(pa.Table.from_pylist(listed, schema=INTERVAL_SCHEMA), sink)
    summary = {
        "history_id": history_id, "cluster": cluster, "warehouse": warehouse.root, "path": root, "source": "kraft",
        "files": origin or metadata_dir, "log_dir": None, "chroot": "/",
        "first_zxid": span["first_zxid"] if from_offset is None else max(from_offset, span["first_zxid"] or 0),
        "last_zxid": span["last_zxid"], "first_time": None, "last_time": _iso(span["last_time"]),
        "base": {"zxid": None, "checkpoint": span["checkpoint"]}, "txns": span["records"], "changes": span["records"],
        "min_interval_ms": min_interval_ms, "checks": dict(sorted(counts.items())),
        "controller_failovers": max(len(tracker.failovers) - 1, 0), "log_errors": span["log_errors"],
        "seconds": round(clock.monotonic() - started, 2), "page": f"{root}/timeline.html",
    }
    page_rows = [{**row, "start_time": _moment(row["start_time"])} for row in listed]
    failovers = [{**f, "from_time": _moment(f["from_time"]), "to_time": _moment(f["to_time"])}
                 for f in tracker.failovers]

    def render(links: Any) -> str:
        return timeline_page(summary, page_rows, failovers, tracker.leadership, links)

    warehouse.write_text(summary["page"], render(links_for(warehouse, summary["page"])))
    warehouse.write_json(f"{root}/history.json", summary)
    publish_in_data_docs(warehouse, summary, render)
    return summary


def _moment(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


def _iso(ms: int | None) -> str | None:
    moment = _moment(ms)
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")
