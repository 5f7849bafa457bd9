"""An Airflow hook over kazoo, built from a ``zookeeper`` connection.

Connection fields: host lists ``host:port`` pairs (``zk1:2181,zk2:2181``) and may end in the
chroot; extra ``chroot`` (e.g. ``/kafka``) sets it too. Digest auth comes from login/password,
SASL from extra ``sasl`` (kazoo's ``sasl_options``). Secrets stay in the connection: they are
never logged and never written to the warehouse. The auditor needs READ only (see the README,
"Auditing a real ensemble"); ``test_connection`` says whether its identity may read the chroot.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from kafka_zk_audit.snapshot.connection import ZkSettings, settings_from_connection


class ZooKeeperHook(BaseHook):
    """Read access to a ZooKeeper ensemble (the client is started read-only capable)."""

    conn_name_attr = "zk_conn_id"
    default_conn_name = "zookeeper_default"
    conn_type = "zookeeper"
    hook_name = "ZooKeeper"

    def __init__(self, zk_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.zk_conn_id = zk_conn_id
        self._client: KazooClient | None = None

    def get_settings(self) -> ZkSettings:
        conn = self.get_connection(self.zk_conn_id)
        return settings_from_connection(
            conn.host, conn.port, conn.schema, conn.login, conn.password, conn.extra_dejson
        )

    def get_conn(self) -> KazooClient:
        """A started kazoo client; stop it with :meth:`close`."""
        if self._client is None:
            settings = self.get_settings()
            self.log.info("connecting to ZooKeeper at %s as %s", settings.ensemble, settings.identity)
            client = KazooClient(**settings.kazoo_kwargs())
            try:
                client.start(timeout=settings.timeout)
            except Exception as exc:
                client.close()
                raise ConnectionError(
                    f"cannot reach ZooKeeper at {settings.ensemble} (connection {self.zk_conn_id!r}): {exc}; "
                    "check the connection's host list and that the ensemble is up"
                ) from None
            self._client = client
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.stop()
            self._client.close()
            self._client = None

    def test_connection(self) -> tuple[bool, str]:
        """Connect, and tell whether the connection's identity may read the chroot's root."""
        try:
            client = self.get_conn()
            settings = self.get_settings()
            client.exists("/")
            try:
                client.get_children("/")
                access = "may read the chroot's root"
            except NoAuthError:
                access = "may NOT read the chroot's root: the snapshot will only record its stat"
            return True, f"connected to {settings.ensemble} as {settings.identity}, which {access}"
        except Exception as exc:
            return False, str(exc)
        finally:
            self.close()

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {
            "hidden_fields": ["port"],
            "relabeling": {"host": "Hosts (host:port[,host:port…][/chroot])", "schema": "Chroot"},
            "placeholders": {"host": "zk1:2181,zk2:2181", "schema": "/kafka", "extra": '{"chroot": "/kafka"}'},
        }


def connection_settings(zk_conn_id: str | None) -> ZkSettings | None:
    """The settings of the ZooKeeper connection ``zk_conn_id`` (hosts, chroot, identity), or None when it is not
    given or not defined: a cluster audited from its files may have no connection."""
    if not zk_conn_id:
        return None
    try:
        return ZooKeeperHook(zk_conn_id=zk_conn_id).get_settings()
    except Exception:  # no such connection (Airflow raises its own not-found error)
        return None
