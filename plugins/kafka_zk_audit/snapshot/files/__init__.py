"""The files source of the snapshot stage: a snapshot rebuilt from ZooKeeper's own files, no live ensemble needed.

    dataDir (snapshot.<zxid>[.gz|.snappy]) + dataLogDir (log.<zxid>)
        ──snapfile, txnlog──▶ snapshot + txns ──replay──▶ the DataTree at a zxid or time, digest-checked
        ──rebuild──▶ the same snapshot Parquet + manifest a live walk writes (``source: "files"``)

``sources`` says where the files come from (a folder, fsspec, SFTP), ``take`` is a cluster's snapshot task from its
files. Every byte is checked (snapshot seals, log checksums, zxid continuity, ZooKeeper's tree digest on 3.6+): a
corrupt or incomplete set of files is refused with OfflineFilesError, never half used.
"""
