#!/usr/bin/env bash
# make demo: a local ZooKeeper on loopback, a simulated Kafka cluster with planted problems,
# then the kafka_zk_audit DAG once end to end (kafka-zk-audit run), its summary and Data Docs path.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
PORT=${KAFKA_ZK_AUDIT_DEMO_PORT:-21810}
ZK_DIR=.zookeeper/demo
WAREHOUSE=${KAFKA_ZK_AUDIT_WAREHOUSE:-$PWD/warehouse}
READY=$ZK_DIR/simulator.ready.json
PLANTS=(leader_not_in_isr under_replicated delete_marker_orphaned owner_assignment_mismatch malformed_znode)

sim_pid=""
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
  python -m kafka_zk_audit_testing.zk_server stop --data-dir "$ZK_DIR" --port "$PORT" >/dev/null
}
trap cleanup EXIT

python -m kafka_zk_audit_testing.zk_server stop --data-dir "$ZK_DIR" --port "$PORT" >/dev/null 2>&1
rm -rf "$ZK_DIR" && mkdir -p "$ZK_DIR"
python -m kafka_zk_audit_testing.zk_server start --data-dir "$ZK_DIR" --port "$PORT" || exit 2

echo "writing the demo Kafka cluster (3.x, 5 brokers, 8 topics, 2 old-consumer groups) under /kafka"
plant_args=()
for p in "${PLANTS[@]}"; do plant_args+=(--plant "$p"); done
python -m kafka_zk_audit_testing.simulator --zk "127.0.0.1:$PORT/kafka" --era 3.x --brokers 5 --topics 8 --partitions 6 \
  --replication-factor 3 --groups 2 --consumers 2 --threads 2 "${plant_args[@]}" \
  --hold --ready-file "$READY" &
sim_pid=$!
for _ in $(seq 1 600); do
  [ -f "$READY" ] && break
  kill -0 "$sim_pid" 2>/dev/null || { echo "the simulator stopped early" >&2; exit 2; }
  sleep 0.1
done
[ -f "$READY" ] || { echo "the simulator did not finish writing in 60 s" >&2; exit 2; }

echo "planted: ${PLANTS[*]}"
kafka-zk-audit run --zk "127.0.0.1:$PORT/kafka" --warehouse "$WAREHOUSE"
code=$?
echo
if [ "$code" = 1 ]; then
  echo "The gate failed, as it should: the demo cluster has planted problems (see the Data Docs above)."
  exit 0
fi
exit "$code"
