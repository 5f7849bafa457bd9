"""One place that builds SparkSessions the way this project runs them."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kafka_zk_audit.audit.jvm_handles import keep_jvm_handles

if TYPE_CHECKING:  # pyspark is imported where a session is made: the DAG file imports submit_conf without it
    from pyspark.sql import SparkSession

T = TypeVar("T")

# Every session: no UI, and no Python-side DataFrame debugging info (it costs JVM round trips on
# every call: planning the normalizer's ~25 tables takes about half as long without it).
# Case mappings (upper, lower, initcap) by the JVM, as Kafka's own Java code maps its names, not by ICU: the first
# ICU mapping of a JVM initializes ICU's break iterators, about 3 GB of allocations and 1 s on the path of an audit's
# normalizer (ACL resource types), for strings that are ASCII names.
COMMON_CONF = {
    "spark.ui.enabled": "false",
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.icu.caseMappings.enabled": "false",
}
# A session that starts its own JVM to host many audits one after the other (the test suite's session of each
# worker, a notebook's) keeps the JVM's full tiered JIT: C2's compilations cost more CPU over the first audits and
# pay it back over the next ones (bench/bench_session_jit.py; the in-process Spark tests in one session: about a
# quarter less wall time for the same CPU; with both cores busy, as in the two-worker suite, no change measured).
LONG_LIVED_DRIVER_JAVA_OPTIONS = "-XX:ReservedCodeCacheSize=240m"
# The driver JVM's options, given at launch (spark-submit ``--conf``, or a session that starts its own JVM). An audit
# spends its time in the driver planning a few hundred small Spark plans, in a JVM that lives a minute: the C1 JIT
# alone (no C2) compiles that code sooner and for less CPU (the same audit: ~30% less CPU and wall time, measured with
# bench/profile_audit.py). A large batch's data-heavy work runs in the same JVM (local masters): its launch keeps the
# tiered JIT (``sized_conf``).
# C1 alone would also shrink the code cache to 48 MB, which the generated code of a 1M-znode audit overflows
# ("Out of space in CodeCache"): keep the tiered default's size.
# The JVM's quick JIT only (C1): for a JVM that lives one job (an app, a standalone worker's executor, a test server)
C1_ONLY_JAVA_OPTION = "-XX:TieredStopAtLevel=1"
DRIVER_JAVA_OPTIONS = f"{C1_ONLY_JAVA_OPTION} {LONG_LIVED_DRIVER_JAVA_OPTIONS}"
# Local masters only: the driver on loopback. A cluster's executors must reach the driver, so with a
# spark://, yarn or k8s:// master the driver's address is left to Spark and the cluster's settings.
LOOPBACK_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


# The driver JVM's class-data archive. Before an app's first line runs, its driver JVM loads and verifies about 15,000
# classes from Spark's 280 jars, and interprets them until the JIT catches up. A class-data-sharing archive of them (JDK
# AppCDS, a dynamic archive) maps them instead: the first app of a machine writes it as it exits (about 20 s more,
# once per Java and Spark), every later app and session maps it (one audit app of ten small clusters: a fifth less
# wall and CPU time, bench/bench_jvm_archive.py). The JVM ignores an archive it cannot use (another JDK build, a
# damaged file): the app then runs as without one. ``KAFKA_ZK_AUDIT_JVM_CACHE`` names the folder (default
# ``$XDG_CACHE_HOME/kafka-zk-audit``, else ``~/.cache/kafka-zk-audit``), or ``off``.
JVM_CACHE_ENV = "KAFKA_ZK_AUDIT_JVM_CACHE"
DRIVER_JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"
_CDS_QUIET = "-Xlog:cds*=off"  # writing an archive lists every class it cannot share (signed jars, generated code)
_STALE_WRITER = 1800.0  # seconds after which another writer's claim is taken over (it died before its exit)
# Archives kept in the folder: each is ~180 MB and is written for one Java, Spark install and driver options (a new
# virtualenv or Spark upgrade writes a new one), so a new archive takes the place of the least recently used beyond
# these (an archive's modification time is its last use: each launch that maps it touches it).
KEPT_ARCHIVES = 4


def _java_home() -> Path | None:
    """The Java spark-submit starts: ``JAVA_HOME``'s, else the ``java`` on the PATH."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"]).resolve()
    java = shutil.which("java")
    return Path(java).resolve().parents[1] if java else None


def _spark_jars() -> Path | None:
    """The jars folder of the Spark that spark-submit runs (``SPARK_HOME``, else pyspark's own), without importing
    pyspark."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"]) / "jars"
    spec = importlib.util.find_spec("pyspark")
    return Path(spec.origin).parent / "jars" if spec and spec.origin else None


def _folders_on_classpath_hold_files(jars: Path) -> bool:
    """Whether the driver's classpath has a folder with files in it: Spark's conf folder (``SPARK_CONF_DIR``, else
    ``$SPARK_HOME/conf``), Hadoop's and YARN's, or anything from ``SPARK_DIST_CLASSPATH``. The JVM cannot write an
    archive then, and says so by failing the app's exit code."""
    if os.environ.get("SPARK_DIST_CLASSPATH"):
        return True
    folders = [Path(os.environ.get("SPARK_CONF_DIR") or jars.parent / "conf")]
    folders += [Path(os.environ[name]) for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR") if os.environ.get(name)]
    return any(folder.is_dir() and any(folder.iterdir()) for folder in folders)


def class_data_archive() -> Path | None:
    """This machine's driver class-data archive for this Java, Spark and driver options (it may not exist yet), or
    None when ``KAFKA_ZK_AUDIT_JVM_CACHE=off``, no Java or Spark is found, or a folder with files is on the driver's
    classpath (a ``spark-defaults.conf`` in ``SPARK_CONF_DIR``: the JVM shares no class then)."""
    setting = os.environ.get(JVM_CACHE_ENV, "").strip()
    if setting.lower() == "off":
        return None
    java, jars = _java_home(), _spark_jars()
    if java is None or jars is None or not jars.is_dir() or _folders_on_classpath_hold_files(jars):
        return None
    release = java / "release"
    # the JVM maps an archive only for the classpath it was written with, jar by jar (path, size, time)
    classpath = [f"{entry.path} {entry.stat().st_size} {entry.stat().st_mtime_ns}" for entry in os.scandir(jars)]
    key = hashlib.sha256("\n".join([
        str(java), release.read_text(errors="replace") if release.is_file() else "", *sorted(classpath),
        DRIVER_JAVA_OPTIONS, os.environ.get("SPARK_CONF_DIR", ""),
    ]).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = Path(setting) if setting else cache / "kafka-zk-audit"
    return root / f"spark-driver-{key}.jsa"


def _mapping(archive: Path) -> tuple[str, ...]:
    """The driver JVM options that map an existing archive."""
    return f"-XX:SharedArchiveFile={archive}", _CDS_QUIET


def _with_java_options(conf: Mapping[str, str], *options: str) -> dict[str, str]:
    return {**conf, DRIVER_JAVA_OPTIONS_KEY: " ".join([conf.get(DRIVER_JAVA_OPTIONS_KEY, ""), *options]).strip()}


def _claim_writer(archive: Path) -> Path | None:
    """Become the one process that writes ``archive`` (a ``.writing`` file beside it): its lock, or None when
    another live process writes it or the folder cannot be written."""
    lock = archive.with_name(archive.name + ".writing")
    for _ in range(2):
        try:
            archive.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                if time.time() - lock.stat().st_mtime < _STALE_WRITER:
                    return None
                lock.unlink()
            except FileNotFoundError:
                pass
            continue
        except OSError:
            return None
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return lock
    return None


@contextmanager
def class_data_sharing(conf: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """``conf`` for launching a driver JVM that maps this machine's class-data archive. When there is none yet, one
    launch at a time writes it as its JVM exits, and it is kept when the body returns (not when it raises: a JVM
    killed while writing leaves no archive behind)."""
    archive = class_data_archive()
    if archive is None:
        yield dict(conf)
        return
    if archive.is_file():
        with suppress(OSError):
            os.utime(archive)  # in use: the last one pruned
        yield _with_java_options(conf, *_mapping(archive))
        return
    lock = _claim_writer(archive)
    if lock is None:
        yield dict(conf)
        return
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.part")
    try:
        yield _with_java_options(conf, f"-XX:ArchiveClassesAtExit={partial}", _CDS_QUIET)
        if partial.is_file() and partial.stat().st_size > 0:
            os.replace(partial, archive)
            prune_archives(archive.parent, keep=KEPT_ARCHIVES)
    finally:
        partial.unlink(missing_ok=True)
        lock.unlink(missing_ok=True)


def prune_archives(folder: Path, keep: int = KEPT_ARCHIVES) -> list[Path]:
    """Delete the driver archives of ``folder`` beyond the ``keep`` most recently used (an archive a JVM has mapped
    stays readable to it); returns those deleted."""
    archives = []
    for path in folder.glob("spark-driver-*.jsa"):
        with suppress(OSError):
            archives.append((path.stat().st_mtime, path))
    deleted = []
    for _, path in sorted(archives, reverse=True)[keep:]:
        with suppress(OSError):
            path.unlink()
            deleted.append(path)
    return deleted


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


def submit_conf(znodes: int = 0) -> dict[str, str]:
    """The ``--conf`` settings this project's apps are launched with (the DAG's audit task, the command line); for
    an audit of ``znodes`` from the small-batch size up, its driver's JIT is the full tiered one
    (``sized_conf``)."""
    return sized_conf({"spark.ui.enabled": "false", DRIVER_JAVA_OPTIONS_KEY: DRIVER_JAVA_OPTIONS}, znodes)


def sized_conf(conf: Mapping[str, str], znodes: int) -> dict[str, str]:
    """``conf`` for an audit app of ``znodes``: from the small-batch size up (``SMALL_SNAPSHOT_ZNODES``), the
    project's default driver options (``DRIVER_JAVA_OPTIONS``, C1 only) become the full tiered JIT's
    (``LONG_LIVED_DRIVER_JAVA_OPTIONS``). A large batch parses and joins its rows in the driver JVM (a local master
    runs its tasks there), where C2's code pays: the audit app of 1,075,993 znodes took 141 and 143 s with C1 alone,
    105 and 110 s with the tiered JIT (alternated runs, 2026-11-29). Other driver options are left as they are. The
    class-data archive does not depend on the JIT: both map the same one."""
    sized = dict(conf)
    if znodes >= SMALL_SNAPSHOT_ZNODES and sized.get(DRIVER_JAVA_OPTIONS_KEY) == DRIVER_JAVA_OPTIONS:
        sized[DRIVER_JAVA_OPTIONS_KEY] = LONG_LIVED_DRIVER_JAVA_OPTIONS
    return sized


def session_conf(master: str) -> dict[str, str]:
    """The settings this project adds for a session on ``master``."""
    return {**COMMON_CONF, **(LOOPBACK_CONF if is_local(master) else {})}


def submitted_master() -> str | None:
    """The master spark-submit was given (the Spark connection), or None outside spark-submit.

    spark-submit passes its settings to the driver JVM, not to Python: they are visible only through a
    JVM-backed ``SparkConf``, so connect to the gateway spark-submit started before reading them.
    """
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return SparkConf().get("spark.master", None)


def get_spark(app_name: str, master: str | None = None, shuffle_partitions: int = 8,
              driver_memory: str | None = None, *, long_lived: bool = False) -> SparkSession:
    """A SparkSession; under spark-submit the master comes from spark-submit (the Spark connection).
    ``driver_memory`` (e.g. ``2g``) and ``long_lived`` (a JVM for many audits: ``LONG_LIVED_DRIVER_JAVA_OPTIONS``)
    apply when this call starts the JVM (spark-submit sets its own)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    master = master or submitted_master() or "local[*]"
    if is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in session_conf(master).items():
        builder = builder.config(key, value)
    builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    if SparkContext._active_spark_context is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        archive = class_data_archive()  # this session starts the JVM: map the archive when there is one
        mapped = _mapping(archive) if archive is not None and archive.is_file() else ()
        options = LONG_LIVED_DRIVER_JAVA_OPTIONS if long_lived else DRIVER_JAVA_OPTIONS
        builder = builder.config(DRIVER_JAVA_OPTIONS_KEY, " ".join([options, *mapped]))
        if driver_memory:
            builder = builder.config("spark.driver.memory", driver_memory)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    keep_jvm_handles(spark)
    return spark


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client's session (no JVM in this process: no ``sparkContext``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark: SparkSession) -> int:
    """The default number of partitions of ``spark``'s master: the context's on a classic session; on a Spark Connect
    session, ``spark.default.parallelism`` when the server sets it, else the cores of a local master (``local[N]``;
    this machine's for ``local[*]``: a Connect server of this project runs on loopback), else 2."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured:
        return max(1, int(configured))
    master = spark.conf.get("spark.master", None) or ""
    cores = master[master.find("[") + 1:master.find("]")].split(",")[0] if is_local(master) and "[" in master else ""
    if cores.isdigit():
        return max(1, int(cores))
    return os.cpu_count() or 2 if is_local(master) else 2


# The driver settings of a Spark Connect session that a client can set per session (the server's own launch settings
# are ``ConnectServer``'s): a Connect session's SQL settings are its own, the server's other sessions keep theirs.
CONNECT_SESSION_CONF = {"spark.sql.session.timeZone": "UTC"}
# PySpark routes its functions to Spark Connect's while this variable is set (``SparkSession.builder.remote`` sets
# it for the whole process)
CONNECT_MODE_ENV = "SPARK_CONNECT_MODE_ENABLED"


@contextmanager
def connect_session(url: str) -> Iterator[SparkSession]:
    """A new session on the Spark Connect server at ``url`` (``sc://host:port/;params``, e.g. the Spark provider's
    ``SparkConnectHook.get_connection_url()``), released on the server at exit. PySpark marks the process as a Connect
    client while it lives; the mark is taken back at exit, so a classic session of the same process (a test's, a
    ``dag.test()`` run's gate) builds classic frames again."""
    from pyspark.sql import SparkSession

    marked = os.environ.get(CONNECT_MODE_ENV)
    builder = SparkSession.builder.remote(url)
    for key, value in CONNECT_SESSION_CONF.items():
        builder = builder.config(key, value)
    spark = builder.create()
    try:
        yield spark
    finally:
        try:
            spark.stop()
        finally:
            if marked is None:
                os.environ.pop(CONNECT_MODE_ENV, None)


SMALL_SNAPSHOT_ZNODES = 200_000
# Driver threads that build independent frames at once (the normalizer's tables, the two halves of a collect): a small
# audit's time is the driver's JVM analysing each new frame, and one Python thread keeps one core of it busy.
PLANNING_THREADS = 2


def for_driver_thread(spark: SparkSession, function: Callable[..., T]) -> Callable[..., T]:
    """``function`` to run in another driver thread as this one would: with a copy of this thread's Spark local
    properties (job group, description, scheduler pool) and tags, and on Spark Connect its session. Wrap each call
    anew: threads must not share one copy (Spark sets a running query's id in them)."""
    from pyspark import inheritable_thread_target

    return inheritable_thread_target(spark)(function)


def in_driver_threads(spark: SparkSession, function: Callable[[Any], T], items: Iterable[Any],
                      workers: int = PLANNING_THREADS) -> list[T]:
    """``function(item)`` for every item, ``workers`` driver threads at a time (``for_driver_thread``), in order."""
    with ThreadPoolExecutor(workers, thread_name_prefix="driver") as pool:
        futures = [pool.submit(for_driver_thread(spark, function), item) for item in items]
        return [future.result() for future in futures]


def size_spark_to(spark: SparkSession, rows: int) -> bool:
    """Spark's fixed costs dominate small inputs (a batch's znodes, a history's changes): skip code generation and
    adaptive re-planning there, and size shuffles to the data (about one partition per 100,000 rows; one for a small
    input, whose scans of local relations get one task too). No broadcast join at any size: for a small batch each
    broadcast is a Spark job of its own (a small audit batch then runs in about 16 jobs, not 90), and a large batch's
    checks hold their broadcast hash relations in the driver's memory at once, which a 1,075,993-znode audit overran
    in the default 1 GB driver ("Could not allocate memory to grow BytesToBytesMap"); sort-merge joins spill.
    Without code generation every expression is interpreted: the tasks of a small batch no longer spend most of
    their time compiling projections with Janino. Returns whether the input counts as small."""
    small = rows < SMALL_SNAPSHOT_ZNODES
    spark.conf.set("spark.sql.codegen.wholeStage", str(not small).lower())
    spark.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN" if small else "FALLBACK")
    spark.conf.set("spark.sql.adaptive.enabled", str(not small).lower())
    # one task per stage for a small batch: each task costs milliseconds of scheduling, and one core runs a few
    # hundred rows in no time (local relations too: their scan's parallelism)
    spark.conf.set("spark.sql.shuffle.partitions", "1" if small else str(max(2, min(200, rows // 100_000))))
    if small:
        spark.conf.set("spark.sql.leafNodeDefaultParallelism", "1")
    else:
        spark.conf.unset("spark.sql.leafNodeDefaultParallelism")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # at every size: see above
    # a small batch's frames of one partition (keyed_io.arrow_frame) stay one, so its plans need no shuffle (91 -> 22
    # stages for one small cluster), whatever size the planner estimates for their joins (the product of the sides':
    # past its 128 MB default after two joins of a few kilobytes)
    if small:
        spark.conf.set("spark.sql.maxSinglePartitionBytes", f"{2**63 - 1}b")
    else:
        spark.conf.unset("spark.sql.maxSinglePartitionBytes")
    return small
