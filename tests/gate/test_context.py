"""The gate's File Data Context (gate/context.py): where its Data Docs go."""

from __future__ import annotations

import shutil

from kafka_zk_audit.contract.warehouse import Warehouse
from kafka_zk_audit.gate.context import DOCS_SITE, file_data_context


def test_a_copied_warehouse_writes_its_data_docs_into_its_own_folder(tmp_path):
    """The context stored in ``<warehouse>/gx`` names its Data Docs folder; a warehouse copied (or moved) elsewhere
    must build its pages in its own ``data_docs/``, not in the folder of the warehouse it was copied from."""
    contexts = file_data_context(Warehouse(str(tmp_path / "original")))
    next(contexts).build_data_docs()
    list(contexts)
    before = (tmp_path / "original" / "data_docs" / "index.html").stat().st_mtime_ns
    shutil.copytree(tmp_path / "original", tmp_path / "copy")
    (tmp_path / "copy" / "data_docs" / "index.html").unlink()

    contexts = file_data_context(Warehouse(str(tmp_path / "copy")))
    context = next(contexts)
    sites = context.variables.data_docs_sites
    assert list(sites) == [DOCS_SITE]
    assert sites[DOCS_SITE]["store_backend"]["base_directory"] == str(tmp_path / "copy" / "data_docs")
    context.build_data_docs()
    list(contexts)
    assert (tmp_path / "copy" / "data_docs" / "index.html").is_file()
    assert (tmp_path / "original" / "data_docs" / "index.html").stat().st_mtime_ns == before
