#!/usr/bin/env bash
# System packages kafka-zk-audit needs: a JDK (Spark, ZooKeeper) and Debian's ZooKeeper server.
# Idempotent: installs only what is missing; runs `apt-get update` once, only when it must install.
set -euo pipefail
need=()
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
if [ "${KAFKA_ZK_AUDIT_WITH_CHROMIUM:-0}" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  need+=(chromium)
fi
# the tests fetch ZooKeeper's files over SFTP from OpenSSH's server on loopback
if [ "${KAFKA_ZK_AUDIT_WITH_CHROMIUM:-0}" = 1 ] && [ ! -x /usr/sbin/sshd ]; then
  need+=(openssh-server)
fi
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing system packages: ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
