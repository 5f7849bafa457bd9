"""The docs/ pages against the code: the checks page is current, every check has a remedy, and the contract,
settings and layout pages name every table column, setting, param, file key, option and link target there is."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructType,
)

from kafka_zk_audit.contract.catalogue import CHECK_IDS, CHECKS
from kafka_zk_audit.contract.remedies import REMEDIES
from kafka_zk_audit.contract.schemas import ENDPOINT, FINDINGS, ORIGIN, SNAPSHOT, TABLES

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PACKAGE = REPO / "plugins" / "kafka_zk_audit"


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The text under the heading line that starts with ``heading``, up to the next heading of its level or higher."""
    level = len(heading) - len(heading.lstrip("#"))
    found = re.search(rf"^{re.escape(heading)}.*\n", text, flags=re.MULTILINE)
    assert found, f"no heading {heading!r}"
    start = found.end()
    following = re.search(rf"^#{{1,{level}}} ", text[start:], flags=re.MULTILINE)
    return text[start : start + following.start()] if following else text[start:]


def table_rows(text: str, first_header: str) -> list[list[str]]:
    """The body rows (cells stripped) of the first Markdown table whose header starts with ``first_header``."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"| {first_header} |"):
            rows = []
            for body in lines[i + 2 :]:
                if not body.startswith("|"):
                    break
                rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", body.strip())[1:-1]])
            return rows
    raise AssertionError(f"no table starting with | {first_header} |")


def code_names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_docs", REPO / "scripts" / "generate_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def type_name(dtype: DataType) -> str:
    """How the contract writes a column type."""
    if isinstance(dtype, ArrayType):
        return "array<endpoint>" if dtype.elementType == ENDPOINT else f"array<{type_name(dtype.elementType)}>"
    if isinstance(dtype, MapType):
        return f"map<{type_name(dtype.keyType)},{type_name(dtype.valueType)}>"
    names = {IntegerType: "int", LongType: "long", StringType: "string", BooleanType: "boolean", BinaryType: "binary"}
    return names[type(dtype)]


def typed_columns(text: str) -> list[tuple[str, str]]:
    """``[(name, type)]`` from text such as "`broker_id` int, `endpoints` array<endpoint>, …"."""
    return re.findall(r"`(\w+)` ((?:array|map)<(?:[\w,]|<[\w,]+>)+>|int|long|string|boolean|binary)(?![\w<])", text)


def schema_columns(schema: StructType) -> list[tuple[str, str]]:
    return [(field.name, type_name(field.dataType)) for field in schema.fields]


# --- checks.md and the remedies -----------------------------------------------------------------------------


def test_every_check_has_a_remedy() -> None:
    missing = [check_id for check_id in CHECK_IDS if not REMEDIES.get(check_id, "").strip()]
    assert not missing, f"add a remedy to plugins/kafka_zk_audit/contract/remedies.py for: {', '.join(missing)}"
    unknown = sorted(set(REMEDIES) - set(CHECK_IDS))
    assert not unknown, f"remedies for ids the catalogue does not have: {', '.join(unknown)}"


def test_remedies_are_short_sentences() -> None:
    for check_id, remedy in REMEDIES.items():
        assert remedy.rstrip().endswith("."), f"{check_id}: end the remedy with a full stop"
        assert len(remedy) <= 500, f"{check_id}: {len(remedy)} characters; keep a remedy to one or two sentences"
        assert "  " not in remedy, check_id


def test_checks_page_is_current() -> None:
    generated = load_generator().render_checks()
    assert page("checks.md") == generated, "docs/checks.md is stale: run `make docs`"


def test_checks_page_documents_every_check() -> None:
    text = page("checks.md")
    overview = {row[0]: row for row in table_rows(text, "check")}
    for check in CHECKS:
        row = overview[f"[`{check.check_id}`](#{check.check_id})"]
        assert row[1] == check.severity and f"`{check.entity}`" in row[2]
        assert row[3] == ("yes" if check.history else "no")
        body = section(text, f"### `{check.check_id}`")
        assert f"**{check.severity}**" in body and f"entity `{check.entity}`" in body
        assert ("previous audited snapshot" in body) == check.history
        assert f"**Remedy:** {REMEDIES[check.check_id]}" in body
        assert section(text, f"## Entity `{check.entity}`").count(f"### `{check.check_id}`") == 1


def test_catalogue_text_becomes_safe_markdown() -> None:
    markdown_text = load_generator().markdown_text
    assert markdown_text("a /brokers/ids/<id> znode") == "a `/brokers/ids/<id>` znode"
    assert markdown_text("/controller's brokerid") == "`/controller`'s brokerid"
    assert markdown_text("no .../partitions/<p>/state") == "no `.../partitions/<p>/state`"
    assert markdown_text("a missing topic/partition, x < y") == "a missing topic/partition, x &lt; y"
    assert markdown_text("kept `<code>` as is") == "kept `<code>` as is"


def test_generator_refuses_a_check_without_remedy() -> None:
    generator = load_generator()
    stranger = type(CHECKS[0])("no_such_check", "error", "znodes", "a check nobody wrote a remedy for")
    with pytest.raises(ValueError, match="no remedy for no_such_check"):
        generator.render_checks((*CHECKS, stranger))
    assert generator.main(["--check"]) == 0


def test_checks_page_documents_every_readiness_condition() -> None:
    from kafka_zk_audit.contract.readiness import CONDITIONS, NOT_VISIBLE

    text = page("checks.md")
    readiness = section(text, "## Migration readiness")
    overview = table_rows(readiness, "condition")
    assert [(row[0], row[1]) for row in overview] == [
        (c.condition_id, f"[`{c.check_id}`](#{c.check_id})") for c in CONDITIONS
    ]
    markdown_text = load_generator().markdown_text
    for condition, row in zip(CONDITIONS, overview, strict=True):
        assert row[2] == condition.describe_levels()
        body = section(readiness, f"### `{condition.check_id}`")
        assert f"Condition **{condition.condition_id}**" in body
        assert f"**Remedy:** {markdown_text(condition.remedy)}" in body
        assert f"**Source:** {markdown_text(condition.source)}." in body
    assert "R14" in readiness and "### `kraft_" not in section(text, "## Overview")
    checklist = section(readiness, "### What ZooKeeper cannot show")
    assert all(markdown_text(item.item) in checklist for item in NOT_VISIBLE)


# --- contract.md --------------------------------------------------------------------------------------------


def test_contract_lists_every_normalized_table_and_column() -> None:
    text = section(page("contract.md"), "### Normalized tables")
    documented = {code_names(row[0])[0]: typed_columns(row[2]) for row in table_rows(text, "table")}
    assert list(documented) == list(TABLES)
    origin = [(name, type_name(dtype)) for name, dtype in ORIGIN]
    for table, schema in TABLES.items():
        assert documented[table] + origin == schema_columns(schema), table
    endpoint_note = next(line for line in text.splitlines() if line.startswith("- `endpoint` is a struct"))
    assert typed_columns(endpoint_note.split("struct", 1)[1]) == schema_columns(ENDPOINT)


def test_contract_lists_the_findings_and_snapshot_columns() -> None:
    text = page("contract.md")
    rows = table_rows(section(text, "### Findings"), "column")
    findings = [(code_names(row[0])[0], row[1].split(",")[0]) for row in rows]
    assert findings == schema_columns(FINDINGS)
    snapshot = section(text, "### The snapshot").split("Columns,", 1)[1]
    assert typed_columns(snapshot) == schema_columns(SNAPSHOT)


def dag_params() -> list[str]:
    """The param names of the DAGs, read from the source of ``_params`` (the dict it returns)."""
    tree = ast.parse((PACKAGE / "airflow" / "dag.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "_params":
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Dict):
                    return [key.value for key in ret.value.keys if isinstance(key, ast.Constant)]
    raise AssertionError("no _params() returning a dict in airflow/dag.py")


def test_contract_lists_every_dag_param() -> None:
    rows = table_rows(section(page("contract.md"), "### Params (all optional)"), "param")
    assert [code_names(row[0])[0] for row in rows] == dag_params()


def test_contract_lists_every_connection_extra_and_environment_variable() -> None:
    text = page("contract.md")
    extras = set(re.findall(r'extra(?:\.get\(|\[)"(\w+)"', (PACKAGE / "snapshot" / "connection.py").read_text()))
    zookeeper = section(text, "### ZooKeeper (conn type `zookeeper`)")
    assert extras and all(f"extra `{name}`" in zookeeper for name in extras), extras
    documented = {code_names(row[0])[0] for row in table_rows(section(text, "## Environment variables"), "variable")}
    used = set()
    for source in [*PACKAGE.rglob("*.py"), *(REPO / "scripts").glob("*.py")]:  # the package and its set-up tools
        used |= set(re.findall(r"\bKAFKA_ZK_AUDIT_[A-Z_]+\b", source.read_text()))
    assert used == documented


def test_contract_lists_every_summary_key() -> None:
    from kafka_zk_audit.report.summary import build_summary

    manifest = {"snapshot_id": "20260101T000000Z", "started_at": "2026-01-01T00:00:00+00:00", "znodes": 0,
                "zxid_window": [None, None]}
    summary = build_summary(manifest, None, None, "/wh/data_docs/index.html")  # no verdict: gate.error is set
    keys = set(summary) | set(summary["gate"])
    block = section(page("contract.md"), "### summary.json")
    assert set(re.findall(r'"(\w+)":', block)) == keys


def test_contract_lists_every_audit_json_key() -> None:
    source = (PACKAGE / "audit" / "job.py").read_text()
    result = re.search(r"result = \{(.*?)\n    \}", source, flags=re.DOTALL)
    assert result, "no result dict in audit/job.py"
    keys = set(re.findall(r'^\s+"(\w+)":', result.group(1), flags=re.MULTILINE))
    assert keys and keys <= set(code_names(section(page("contract.md"), "### audit.json")))


def test_contract_lists_the_drift_table_and_fleet_keys() -> None:
    from kafka_zk_audit.contract.schemas import DRIFT

    text = page("contract.md")
    assert typed_columns(section(text, "### The drift table")) == schema_columns(DRIFT)
    source = (PACKAGE / "report" / "fleet.py").read_text()
    fleet = re.search(r"fleet = \{(.*?)\n    \}", source, flags=re.DOTALL)
    assert fleet, "no fleet dict in report/fleet.py"
    keys = set(re.findall(r'^\s+"(\w+)":', fleet.group(1), flags=re.MULTILINE))
    assert keys and keys <= set(re.findall(r'"(\w+)":', section(text, "### fleet.json")))


@pytest.mark.zk
def test_contract_lists_every_manifest_key(zk_server, zk_chroot, zk_client, tmp_path) -> None:
    from kafka_zk_audit.contract.warehouse import Warehouse
    from kafka_zk_audit.snapshot.connection import ZkSettings
    from kafka_zk_audit.snapshot.live import write_snapshot

    zk_client.create("/brokers/ids/1", b'{"version":1,"host":"h","port":9092}', makepath=True)
    manifest = write_snapshot(zk_client, ZkSettings(hosts=zk_server.hosts, chroot=zk_chroot), Warehouse(str(tmp_path)),
                              "20260101T000000Z")
    rows = table_rows(section(page("contract.md"), "### The manifest"), "key")
    documented = [name for row in rows for name in code_names(row[0])]
    assert sorted(documented) == sorted(manifest)
    options = next(row[1] for row in rows if code_names(row[0]) == ["options"])
    assert set(code_names(options)) == set(manifest["options"])


def test_contract_lists_the_spark_app_arguments(capsys) -> None:
    from kafka_zk_audit.audit.job import main

    with pytest.raises(SystemExit):
        main(["--help"])
    options = set(re.findall(r"(--[a-z-]+)", capsys.readouterr().out)) - {"--help"}
    rows = table_rows(section(page("contract.md"), "## The Spark app"), "argument")
    assert {name for row in rows for name in code_names(row[0])} == options


def test_contract_lists_every_cli_option_and_exit_code() -> None:
    from kafka_zk_audit.cli import main as cli

    commands = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    run = commands.choices["run"]
    options = {opt for action in run._actions for opt in action.option_strings} - {"-h", "--help"}
    text = section(page("contract.md"), "## The command line")
    documented = {name for row in table_rows(text, "option") for name in code_names(row[0])}
    assert documented == options
    codes = {row[0] for row in table_rows(text, "exit code")}
    exits = {str(value) for name, value in vars(cli).items() if name.startswith("EXIT_")}
    assert exits and exits <= codes


# --- znode-layout.md ------------------------------------------------------------------------------------------


def test_layout_page_names_every_znode_kind_and_table() -> None:
    from kafka_zk_audit.audit.normalize.kinds import RULES

    rows = table_rows(section(page("znode-layout.md"), "## Summary"), "path")
    assert {code_names(row[2])[0] for row in rows} == {kind for _, kind, _ in RULES}
    tables = {name for row in rows for name in code_names(row[3])}
    assert tables | {"malformed_znodes", "unreadable_znodes"} == set(TABLES)  # any kind, or none


# --- settings.md ----------------------------------------------------------------------------------------------


def shown(default: object) -> str:
    """A default as settings.md writes it."""
    if default is None or isinstance(default, bool):
        return "null" if default is None else str(default).lower()
    if isinstance(default, list) and default:
        return "[" + ", ".join(map(str, default)) + "]"
    return str(default)


def test_settings_page_lists_every_setting() -> None:
    from kafka_zk_audit.contract.settings import ClusterConfig, Suppression

    defaults = yaml.safe_load((PACKAGE / "contract" / "default_settings.yaml").read_text())
    text = page("settings.md")
    for key, value in defaults.items():
        assert f"## `{key}`" in text, key
        if isinstance(value, dict | list) and not value:
            continue  # documented by examples and, for lists, the entry tables below
        documented = {code_names(row[0])[0]: row[1] for row in table_rows(section(text, f"## `{key}`"), "key")}
        expected = {f"{key}.{name}": default for name, default in value.items()} if isinstance(value, dict) \
            else {key: value}
        assert set(documented) == set(expected), key
        for name, default in expected.items():
            assert documented[name] == f"`{shown(default)}`", name
    for heading, model in (("## `suppressions`", Suppression), ("## `clusters`", ClusterConfig)):
        entries = table_rows(section(text, heading), "key")
        assert {code_names(row[0])[0] for row in entries} == set(model.model_fields), heading


def test_settings_examples_are_valid() -> None:
    from kafka_zk_audit.contract.settings import parse_config

    for example in re.findall(r"```yaml\n(.*?)```", page("settings.md"), flags=re.DOTALL):
        parse_config(yaml.safe_load(example), source="docs/settings.md example")


# --- links --------------------------------------------------------------------------------------------------


FENCED = re.compile(r"^```.*?^```", flags=re.MULTILINE | re.DOTALL)
DOCUMENTS = ["README.md", *(f"docs/{p.name}" for p in sorted(DOCS.glob("*.md")))]


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: the heading's text (a link's label, code without its backticks) lower case,
    punctuation dropped, spaces as hyphens; a repeated anchor gets ``-1``, ``-2``, …. Lines of fenced code are not
    headings."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+?)#*$", FENCED.sub("", text), flags=re.MULTILINE):
        label = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
        slug = re.sub(r"[^\w\- ]", "", label.lower()).replace(" ", "-")
        anchor, count = slug, 0
        while anchor in found:
            count += 1
            anchor = f"{slug}-{count}"
        found.add(anchor)
    return found


def test_anchors_are_githubs():
    text = "# A `run`: (B) → C\n## A `run`: (B) → C\n```\n# not a heading\n```\n### [Link](x.md) too ##\n"
    assert anchors(text) == {"a-run-b--c", "a-run-b--c-1", "link-too"}


def links(document: str) -> list[str]:
    """The link targets of a page, outside fenced and inline code."""
    text = FENCED.sub("", (REPO / document).read_text(encoding="utf-8"))
    return re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`\n]*`", "", text))


@pytest.mark.parametrize("document", DOCUMENTS)
def test_relative_links_resolve(document: str) -> None:
    """Every relative link of the README and docs/ names a file of the repository, and its #anchor a heading there
    (a bare #anchor: one of the page itself)."""
    source = REPO / document
    targets = links(document)
    assert targets or document == "docs/znode-layout.md", f"{document} links nowhere"
    for target in targets:
        if "://" in target or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve() if path else source
        assert resolved.is_relative_to(REPO), f"{document} links outside the repository: {target}"
        assert resolved.exists(), f"{document}: broken link {target}"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved.read_text(encoding="utf-8")), f"{document}: no anchor {target}"


def test_every_page_is_in_the_docs_index_and_linked_from_the_readme() -> None:
    index = set(links("docs/README.md"))
    readme = {target.partition("#")[0] for target in links("README.md")}
    for name in sorted(p.name for p in DOCS.glob("*.md") if p.name != "README.md"):
        assert name in index, f"docs/README.md does not list {name}"
        assert f"docs/{name}" in readme, f"the README does not link docs/{name}"


def test_the_readme_is_a_door() -> None:
    """Under 350 lines, no table cell a page long, and a performance summary of at most 15 rows (the full tables are
    in docs/performance.md, written by ``make bench``)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 350
    cells = [cell for line in text.splitlines() if line.startswith("|") for cell in line.split("|")]
    assert max(map(len, cells)) < 400
    summary = text.split("<!-- bench_summary:begin -->", 1)[1].split("<!-- bench_summary:end -->", 1)[0]
    assert 0 < len([line for line in summary.splitlines() if line.startswith("| ")]) - 1 <= 15
    assert "<!-- bench_all:begin -->" in (DOCS / "performance.md").read_text(encoding="utf-8")
