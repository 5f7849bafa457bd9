"""Audit from ZooKeeper's own files: a snapshot table rebuilt offline, no live ensemble needed.

    dataDir (snapshot.<zxid>[.gz|.snappy]) + dataLogDir (log.<zxid>)
        ──snapfile, txnlog──▶ snapshot + txns ──replay──▶ the DataTree at a zxid or time, digest-checked
        ──rebuild──▶ the same snapshot Parquet + manifest a live walk writes (``source: "files"``)

Every byte is checked (snapshot seals, log checksums, zxid continuity, ZooKeeper's tree digest on 3.6+):
a corrupt or incomplete set of files is refused with OfflineFilesError, never half used.
"""
