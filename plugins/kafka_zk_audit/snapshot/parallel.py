"""One snapshot over several connections: disjoint subtrees walked by worker processes (opt-in).

With ``SnapshotOptions.parallel_connections`` = N > 1 the walk that ``live.write_snapshot`` started (it has claimed the
snapshot directory and taken the start sync zxid) lists ``/brokers/topics``, the bulk of a Kafka tree, and
starts N worker processes, each with its own connection and session: worker *i* walks every N-th topic, worker 0
also walks the rest of the tree (everything but the topics below ``/brokers/topics``). Each worker syncs its
server first, then writes its own part files (``part-w<i>-<n>.parquet``) into the snapshot directory. The load
caps hold for the whole snapshot: each worker gets 1/N of ``max_reads_in_flight``, ``max_bytes_in_flight``,
the requests in flight and ``reads_per_second``.

A snapshot is complete or absent: the manifest is written by the parent once every worker succeeded; when one
fails, the others are stopped, the directory is removed and the error raised. A worker also exits when its
parent goes away (its stdin closes). Connection settings, the fingerprint key and the brokers'
``password.encoder.secret`` (a paired cluster's) reach the workers through a pipe, never through their arguments or
environment.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import pickle
import resource
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError

from kafka_zk_audit.contract.snapshot_options import SnapshotOptions
from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.snapshot.connection import KAZOO_LOGGER, ZkSettings
from kafka_zk_audit.snapshot.faults import SnapshotInterrupted, with_retry
from kafka_zk_audit.snapshot.password_encoder import PasswordDecoder
from kafka_zk_audit.snapshot.secrets import Fingerprinter
from kafka_zk_audit.snapshot.walker import TreeWalker
from kafka_zk_audit.snapshot.writer import write_parquet

log = logging.getLogger(__name__)

# Most of a Kafka tree: every topic with its partitions and their states.
SPLIT_PARENT = "/brokers/topics"
POLL_S = 0.05
STOP_GRACE_S = 5.0
# The outcome printed and every file closed, a worker skips the interpreter's teardown (a second or more).
WORKER_ENTRY = "import os; from kafka_zk_audit.snapshot.parallel import worker_main; os._exit(worker_main())"
SUMMED_STATS = ("znodes", "data_bytes", "vanished", "unreadable", "fingerprinted", "requests", "reads")


class SnapshotWorkerFailed(RuntimeError):
    """A worker of a parallel walk failed; the other workers were stopped and no snapshot was written."""


@dataclass(frozen=True)
class WorkerTask:
    """What one worker walks, and where it writes."""

    index: int
    settings: ZkSettings
    options: SnapshotOptions
    roots: tuple[str, ...]
    prune: tuple[str, ...]
    warehouse_root: str
    target: str
    key: bytes | None = field(default=None, repr=False)
    password_secret: str | None = field(default=None, repr=False)  # the brokers' password.encoder.secret


def worker_options(options: SnapshotOptions, workers: int, mode: str) -> SnapshotOptions:
    """One worker's share of the load caps, so that all workers together stay within ``options``."""
    return dataclasses.replace(
        options,
        read_mode=mode,
        parallel_connections=1,
        max_reads_in_flight=max(1, options.max_reads_in_flight // workers),
        max_bytes_in_flight=max(1, options.max_bytes_in_flight // workers),
        max_in_flight=max(1, options.in_flight(mode) // workers),
        reads_per_second=options.reads_per_second / workers,
    )


def plan_workers(walker: TreeWalker, workers: int) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(roots, pruned znodes) of each worker: every ``workers``-th topic each, the rest of the tree to worker 0.

    Without a readable ``/brokers/topics`` to share (absent, excluded, not readable), one worker walks it all.
    """
    options = walker.options
    if not options.descends(SPLIT_PARENT):
        return [(walker.roots, ())]
    try:
        names = with_retry(options, lambda: walker.client.get_children(SPLIT_PARENT))
    except (NoNodeError, NoAuthError):
        return [(walker.roots, ())]
    topics = sorted(
        path for path in (f"{SPLIT_PARENT}/{name}" for name in names)
        if options.wants(path) or options.descends(path)
    )
    plans = [((*walker.roots, *topics[0::workers]), (SPLIT_PARENT,))]
    plans += [(tuple(topics[index::workers]), ()) for index in range(1, workers)]
    return [plan for plan in plans if plan[0]]


def walk_in_parallel(
    walker: TreeWalker, settings: ZkSettings, warehouse: Warehouse, target: str, key: bytes | None,
    decoder: PasswordDecoder | None = None,
) -> tuple[list[str], list[dict[str, Any]]]:
    """Walk the tree of ``walker`` over ``walker.options.parallel_connections`` worker processes into ``target``.

    Returns the files written and a summary per worker; ``walker.stats`` gets the sums, the mzxid range over
    all workers and the largest peak RSS of any process. Raises ``SnapshotWorkerFailed`` (or
    ``SnapshotInterrupted``) when a worker fails, after stopping the others.
    """
    options = walker.options
    # The workers start first: they load their modules while this process plans the walk.
    processes = [_start_worker() for _ in range(options.parallel_connections)]
    try:
        mode = walker.stats.mode = walker.probe_mode()
        plans = plan_workers(walker, options.parallel_connections)
        share = worker_options(options, len(plans), mode)
        tasks = [
            WorkerTask(index, settings, share, roots, prune, warehouse.root, target, key,
                       None if decoder is None else decoder.secret)
            for index, (roots, prune) in enumerate(plans)
        ]
        log.info("walking with %d connections (%s mode), %s", len(tasks), mode,
                 ", ".join(f"worker {t.index}: {len(t.roots)} roots" for t in tasks))
        for task, process in zip(tasks, processes, strict=False):
            _give_task(process, task)
        for spare in processes[len(tasks):]:  # fewer subtrees than connections: it exits on end of input
            assert spare.stdin is not None
            spare.stdin.close()
        outcomes = _collect(list(zip(tasks, processes, strict=False)), walker)
    finally:
        _stop(processes)
    return _merge(walker, outcomes)


def _start_worker() -> subprocess.Popen:
    """A worker process, waiting for its task on its stdin (which stays open until the parent is done with it)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in sys.path if path))
    return subprocess.Popen([sys.executable, "-c", WORKER_ENTRY], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env)


def _give_task(process: subprocess.Popen, task: WorkerTask) -> None:
    assert process.stdin is not None
    pickle.dump(task, process.stdin)
    process.stdin.flush()


def _collect(processes: list[tuple[WorkerTask, subprocess.Popen]], walker: TreeWalker) -> list[dict[str, Any]]:
    """Wait for every worker; on the first failure, raise (the caller stops the others)."""
    outcomes: dict[int, dict[str, Any]] = {}
    while len(outcomes) < len(processes):
        for task, process in processes:
            if task.index in outcomes or process.poll() is None:
                continue
            outcome = _outcome(process)
            if process.returncode != 0 or "error" in outcome:
                error, message = outcome.get("error", "WorkerExited"), outcome.get("message", "")
                text = f"worker {task.index} of {len(processes)} failed ({error}: {message}); no snapshot was written"
                if error == "SnapshotInterrupted":
                    raise SnapshotInterrupted(text)
                raise SnapshotWorkerFailed(text)
            outcomes[task.index] = outcome
            if walker.progress is not None:
                _merge(walker, [outcomes[index] for index in sorted(outcomes)])
                walker.progress(walker.stats)
        time.sleep(POLL_S)
    return [outcomes[index] for index in sorted(outcomes)]


def _outcome(process: subprocess.Popen) -> dict[str, Any]:
    """The JSON line a finished worker printed last, or why there is none."""
    assert process.stdout is not None
    lines = process.stdout.read().decode("utf-8", "replace").strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        code = process.returncode
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return {"error": "WorkerExited", "message": f"the worker process ended without a result ({how})"}


def _stop(processes: list[subprocess.Popen]) -> None:
    """Stop the workers still running (terminate, then kill after a grace period) and reap them all."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for process in processes:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None and not stream.closed:
                stream.close()


def _merge(walker: TreeWalker, outcomes: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """Sum the workers' stats into ``walker.stats``; the files and a summary per worker."""
    stats = walker.stats
    for name in SUMMED_STATS:
        setattr(stats, name, sum(outcome["stats"][name] for outcome in outcomes))
    lows = [o["stats"]["min_mzxid"] for o in outcomes if o["stats"]["min_mzxid"] is not None]
    highs = [o["stats"]["max_mzxid"] for o in outcomes if o["stats"]["max_mzxid"] is not None]
    stats.min_mzxid, stats.max_mzxid = (min(lows), max(highs)) if lows else (None, None)
    stats.interruptions = [
        {**interruption, "worker": outcome["index"]}
        for outcome in outcomes for interruption in outcome["stats"]["interruptions"]
    ]
    own_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    stats.peak_rss_mb = max([own_rss, *(outcome["stats"]["peak_rss_mb"] for outcome in outcomes)])
    files = [name for outcome in outcomes for name in outcome["files"]]
    workers = [
        {
            "worker": outcome["index"],
            "znodes": outcome["stats"]["znodes"],
            "reads": outcome["stats"]["reads"],
            "seconds": outcome["seconds"],
            "peak_rss_mb": round(outcome["stats"]["peak_rss_mb"], 1),
        }
        for outcome in outcomes
    ]
    return files, workers


def run_worker(task: WorkerTask) -> dict[str, Any]:
    """Walk the task's subtrees over a connection of its own into its part files; its stats as JSON values."""
    started = time.monotonic()
    client = KazooClient(**task.settings.kazoo_kwargs())
    client.start(timeout=task.options.reconnect_timeout_s)
    try:
        decoder = None if task.password_secret is None else PasswordDecoder(task.password_secret)
        fingerprinter = None if task.key is None else Fingerprinter(task.key, decoder)
        walker = TreeWalker(client, task.options, fingerprinter, roots=task.roots, prune=task.prune)
        # Its server may be a follower behind the leader the parent synced with: catch it up first.
        with_retry(task.options, lambda: client.sync_async("/").get(timeout=task.options.request_timeout_s))
        files = write_parquet(Warehouse(task.warehouse_root), task.target, walker.batches(),
                               task.options.file_rows, prefix=f"part-w{task.index:02d}")
    finally:
        client.stop()
        client.close()
    walker.stats.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "index": task.index,
        "files": files,
        "seconds": round(time.monotonic() - started, 3),
        "stats": dataclasses.asdict(walker.stats),
    }


def _exit_with_parent() -> None:
    """Exit once the parent closes this worker's stdin (it is done with it, or it is gone)."""
    while os.read(sys.stdin.fileno(), 4096):  # the raw descriptor: no buffer lock held at interpreter exit
        pass
    os._exit(3)


def worker_main() -> int:
    """Entry of a worker process: the task from stdin, one JSON line of outcome on stdout."""
    pa.array([0])  # pyarrow loads its pandas support on its first conversion: now, while the parent plans
    try:
        task: WorkerTask = pickle.load(sys.stdin.buffer)
    except EOFError:  # a spare worker: the walk had fewer subtrees than connections
        return 0
    threading.Thread(target=_exit_with_parent, name="parent-watch", daemon=True).start()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s snapshot worker {task.index} %(levelname)s %(name)s: %(message)s")
    logging.getLogger(KAZOO_LOGGER).setLevel(logging.WARNING)  # not every worker's connect and close
    try:
        outcome = run_worker(task)
    except BaseException as exc:  # reported to the parent, which stops the other workers
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}), flush=True)
        sys.stderr.flush()
        return 1
    print(json.dumps(outcome), flush=True)
    sys.stderr.flush()
    return 0
