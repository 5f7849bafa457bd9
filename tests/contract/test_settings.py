"""The audit settings: packaged defaults, durations, merging over defaults, and errors naming key, file and line."""

from __future__ import annotations

import fnmatch
import re
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from kafka_zk_audit.contract.catalogue import CHECK_IDS
from kafka_zk_audit.contract.settings import (
    AuditConfig,
    SettingsError,
    Suppression,
    format_duration,
    glob_to_regex,
    load_config,
    parse_config,
    parse_duration,
)


def test_packaged_defaults() -> None:
    config = load_config(None)
    assert isinstance(config, AuditConfig)
    assert config.sla.delete_topic == timedelta(hours=24)
    assert config.sla.reassignment == timedelta(hours=24)
    assert config.sla.preferred_election == timedelta(hours=1)
    assert config.notification_backlog.max_children == 100
    assert config.notification_backlog.max_age == timedelta(minutes=30)
    assert config.severity_overrides == {}
    assert config.suppressions == ()
    assert config.alerts.only_new is True
    assert config.alerts.email_to == ()
    assert config.alerts.smtp_conn_id == "smtp_default"
    assert config.alerts.webhook_conn_id is None
    assert config.alerts.top_offenders == 10
    assert config.gate.gating_severities == ("critical", "error")
    assert config.severity_of("offline_partition") == "critical"
    assert config.is_gating("error") and not config.is_gating("warning")


def test_every_default_setting_is_documented() -> None:
    text = (Path(__file__).resolve().parents[2] / "plugins/kafka_zk_audit/contract/default_settings.yaml").read_text()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\s*[a-z_]+:", line):
            above = lines[i - 1].strip() if i else ""
            assert above.startswith("#"), f"undocumented setting: {line.strip()}"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("24h", 86400), ("7d", 604800), ("1w", 604800), ("1h30m", 5400),
     ("1.5h", 5400), (" 2 h ", 7200), ("3600", 3600), (3600, 3600), (0.5, 0.5), ("0s", 0)],
)
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize(
    "text", ["", "soon", "10 minutes", "5x", "-5m", -1, True, None, [1], float("inf"), float("nan"), 1e300]
)
def test_bad_durations(text: object) -> None:
    with pytest.raises(ValueError, match="sla.delete_topic"):
        parse_config({"sla": {"delete_topic": text}})


def test_format_duration() -> None:
    assert [format_duration(timedelta(seconds=s)) for s in (0, 90, 3600, 86400 + 7200, 93784)] == [
        "0s", "1m 30s", "1h", "1d 2h", "1d 2h 3m 4s",
    ]


def test_file_overrides_merge_over_defaults(tmp_path: Path) -> None:
    path = tmp_path / "audit.yaml"
    path.write_text(yaml.safe_dump({
        "sla": {"reassignment": "6h"},
        "notification_backlog": {"max_age": 900},
        "severity_overrides": {"preferred_leader_not_leader": "warning", "under_replicated": "error"},
        "suppressions": [
            {"check_id": "under_replicated", "topic": "scratch-*", "reason": "scratch topics run on one broker"},
            {"check_id": "owner_assignment_mismatch", "group_id": "legacy-?", "broker_id": 3, "reason": "known"},
        ],
        "alerts": {"email_to": ["ops@example.com"], "webhook_conn_id": "chat"},
        "gate": {"gating_severities": ["critical"]},
    }))
    config = load_config(path)
    assert config.sla.reassignment == timedelta(hours=6)
    assert config.sla.delete_topic == timedelta(hours=24)  # untouched default
    assert config.notification_backlog.max_age == timedelta(minutes=15)
    assert config.notification_backlog.max_children == 100
    assert config.severity_of("preferred_leader_not_leader") == "warning"
    assert config.severity_of("under_replicated") == "error"
    assert config.severity_of("leader_not_in_isr") == "error"
    assert config.suppressions == (
        Suppression(check_id="under_replicated", reason="scratch topics run on one broker", topic="scratch-*"),
        Suppression(check_id="owner_assignment_mismatch", reason="known", group_id="legacy-?", broker_id=3),
    )
    assert config.alerts.email_to == ("ops@example.com",)
    assert config.alerts.webhook_conn_id == "chat"
    assert config.alerts.only_new is True
    assert config.gate.gating_severities == ("critical",)
    assert str(path) in config.source


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing changed\n")
    assert load_config(path).sla == load_config(None).sla


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"slas": {}},
         r"unknown key 'slas'.*alerts, clusters, drift, events, fleet, gate, history, migration, notification_backlog"),
        ({"migration": {"target_version": "4.0"}}, r"'migration.target_version' is '4.0'.*\"3.4\" to \"3.9\""),
        ({"migration": {"gate": "yes"}}, r"'migration.gate' is 'yes'; write true or false"),
        ({"sla": {"delete_topc": "1h"}}, r"unknown key 'sla.delete_topc'.*delete_topic, preferred_election"),
        ({"alerts": {"only_new": "yes"}}, r"'alerts.only_new' is 'yes'; write true or false"),
        ({"alerts": {"top_offenders": -1}}, r"'alerts.top_offenders'.*whole number >= 0"),
        ({"notification_backlog": {"max_children": 1.5}}, r"'notification_backlog.max_children'"),
        ({"severity_overrides": {"leader_not_in_isr": "fatal"}}, r"'severity_overrides.leader_not_in_isr'.*critical"),
        ({"severity_overrides": {"leader_in_isr": "error"}}, r"'severity_overrides.leader_in_isr'.*not a check id"),
        ({"suppressions": [{"check_id": "under_replicated"}]}, r"'suppressions\[0\].reason' is missing"),
        ({"suppressions": [{"reason": "x"}]}, r"'suppressions\[0\].check_id' is missing"),
        ({"suppressions": [{"check_id": "nope", "reason": "x"}]}, r"'suppressions\[0\].check_id'"),
        ({"suppressions": [{"check_id": "under_replicated", "reason": "x", "topics": "a"}]},
         r"unknown key 'suppressions\[0\].topics'"),
        ({"suppressions": {"check_id": "under_replicated"}}, r"'suppressions' must be a list"),
        ({"gate": {"gating_severities": ["critical", "bad"]}}, r"'gate.gating_severities\[1\]'"),
        ({"sla": "24h"}, r"'sla' must be a mapping"),
    ],
)
def test_bad_settings_name_the_key(raw: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        parse_config(raw)


def test_null_sections_keep_the_defaults() -> None:
    config = parse_config({"sla": None, "severity_overrides": None, "suppressions": None,
                           "alerts": {"email_to": None}, "gate": None})
    assert config.sla == load_config(None).sla and config.severity_overrides == {} and config.suppressions == ()
    assert config.alerts.email_to == () and config.gate.gating_severities == ("critical", "error")
    assert parse_config({"alerts": {"email_to": "ops@example.com"}}).alerts.email_to == ("ops@example.com",)


@pytest.mark.parametrize(
    ("text", "line", "key", "allowed"),
    [
        ("sla:\n  delete_topic: 2h\n  delete_topc: 1h\n", 3,
         "unknown key 'sla.delete_topc'", "the keys under 'sla' are delete_topic, preferred_election, reassignment"),
        ("# alerts\n\nalerts:\n  only_new: maybe\n", 4, "'alerts.only_new' is 'maybe'", "write true or false"),
        ("severity_overrides:\n  under_replicated: warning\n  leader_in_isr: error\n", 3,
         "'severity_overrides.leader_in_isr' is 'leader_in_isr', which is not a check id",
         "catalogue ids (leader_not_in_isr, "),
        ("notification_backlog:\n  max_children: 5\n  max_age: ten minutes\n", 3,
         "'notification_backlog.max_age' is 'ten minutes'", '"30m", "24h", "7d"'),
        ("gate:\n  gating_severities:\n    - critical\n    - fatal\n", 4,
         "'gate.gating_severities[1]' is 'fatal'", "use one of critical, error, warning, info"),
        ("suppressions:\n  - check_id: under_replicated\n    reason: ok\n  - check_id: offline_partition\n"
         "    topic: scratch-*\n", 4, "'suppressions[1].reason' is missing", "say why"),
        ("alerts:\n  top_offenders: -2\n", 2, "'alerts.top_offenders' is -2", "whole number >= 0"),
        ("sla: 24h\n", 1, "'sla' must be a mapping", "not str"),
    ],
)
def test_file_errors_name_the_key_the_file_and_the_line(tmp_path: Path, text: str, line: int, key: str,
                                                         allowed: str) -> None:
    path = tmp_path / "audit.yaml"
    path.write_text(text)
    with pytest.raises(SettingsError) as caught:
        load_config(path)
    assert len(caught.value.problems) == 1, caught.value
    problem = caught.value.problems[0]
    assert problem.startswith(f"{path}, line {line}: "), problem
    assert key in problem and allowed in problem, problem
    assert problem in str(caught.value)


def test_every_problem_is_listed_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "audit.yaml"
    path.write_text(
        "alerts:\n"
        "  only_new: 1\n"               # line 2
        "sla:\n"
        "  reassignment: 1 day\n"       # line 4
        "sevrity_overrides: {}\n"       # line 5
        "suppressions:\n"
        "  - check_id: nope\n"          # line 7
        "    reason: r\n"
        "    broker: 1\n"               # line 9
    )
    with pytest.raises(SettingsError) as caught:
        load_config(path)
    problems = caught.value.problems
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}, line {n}" for n in (2, 4, 5, 7, 9)], problems
    for problem, key in zip(problems, ("'alerts.only_new'", "'sla.reassignment'", "'sevrity_overrides'",
                                       "'suppressions[0].check_id'", "'suppressions[0].broker'"), strict=True):
        assert key in problem, problem
    assert str(caught.value).startswith("invalid audit settings (5 problems):")


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="missing.yaml: cannot read it"):
        load_config(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("sla:\n  delete_topic: 1h\ngate: [unclosed\n")
    with pytest.raises(SettingsError, match=r"broken.yaml, line 4: not valid YAML"):
        load_config(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    with pytest.raises(SettingsError, match=r"list.yaml, line 1: the settings must be a mapping"):
        load_config(listed)
    assert issubclass(SettingsError, ValueError)


def test_every_check_can_be_overridden() -> None:
    config = parse_config({"severity_overrides": {check_id: "info" for check_id in CHECK_IDS}})
    assert {config.severity_of(check_id) for check_id in CHECK_IDS} == {"info"}


@pytest.mark.parametrize("pattern", ["scratch-*", "t?st", "[!a]*", "[]x]y", "a.b", "we[ird", "x[a-c]", "*.log", "*"])
def test_globs_translate_like_fnmatch(pattern: str) -> None:
    regex = re.compile(glob_to_regex(pattern))
    for name in ("scratch-1", "test", "bcd", "acd", "]y", "xy", "a.b", "axb", "we[ird", "xb", "xd", "app.log", ""):
        assert bool(regex.match(name)) == fnmatch.fnmatchcase(name, pattern), (pattern, name)


FLEET = """\
schedule: "0 * * * *"
clusters:
  - name: prod-eu
    zk_conn_id: zookeeper_prod_eu
    overrides:
      alerts: {email_to: [eu@example.com]}
      sla: {reassignment: 2h}
  - name: prod-us
    zk_conn_id: zookeeper_prod_us
"""


def test_fleet_settings_and_per_cluster_overrides(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET)
    cfg = load_config(path)
    assert cfg.schedule == "0 * * * *"
    assert cfg.cluster_names() == ("prod-eu", "prod-us")
    eu, us = cfg.for_cluster("prod-eu"), cfg.for_cluster("prod-us")
    assert eu.alerts.email_to == ("eu@example.com",) and eu.sla.reassignment.total_seconds() == 7200
    assert us.alerts.email_to == () and us.sla.reassignment.total_seconds() == 86400
    assert cfg.for_cluster("unknown") is cfg


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('      sla: {reassignment: 2h}\n', "line 7: 'clusters[0].overrides.schedule' cannot be overridden"),
        ('      sla: {reassignment: soon}\n', "line 7: 'clusters[0].overrides.sla.reassignment' is 'soon'"),
        ('  - name: prod-us\n', "cluster names must be unique; prod-eu"),
    ],
)
def test_bad_fleet_settings_name_the_key_and_line(tmp_path: Path, change: str, message: str) -> None:
    text = FLEET
    if "schedule" in message:
        text = text.replace(change, "      schedule: '@daily'\n")
    elif "unique" in message:
        text = text.replace("name: prod-us", "name: prod-eu")
    else:
        text = text.replace("reassignment: 2h", "reassignment: soon")
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    with pytest.raises(SettingsError, match=re.escape(message)):
        load_config(path)


def test_a_cluster_may_be_audited_from_its_files_and_needs_a_connection_or_files(tmp_path: Path) -> None:
    path = tmp_path / "files.yaml"
    path.write_text("clusters:\n  - name: dr\n    files: {data_dir: /var/lib/zookeeper, sftp_conn_id: zk_dr}\n"
                    "  - name: live\n    zk_conn_id: zookeeper_live\n")
    dr, live = load_config(path).clusters
    assert dr.zk_conn_id is None and dr.files is not None and dr.files.data_dir == "/var/lib/zookeeper"
    assert dr.files.log_dir is None and dr.files.sftp_conn_id == "zk_dr" and live.files is None
    path.write_text("clusters:\n  - name: dr\n    files: {log_dir: /logs, dir: /x}\n  - name: none\n")
    with pytest.raises(SettingsError) as error:
        load_config(path)
    assert "line 3: unknown key 'clusters[0].files.dir'" in str(error.value)
    assert "'clusters[0].files.data_dir' is missing; give the folder" in str(error.value)
    path.write_text("clusters:\n  - name: none\n")
    with pytest.raises(SettingsError, match=re.escape("line 2: cluster 'none' needs zk_conn_id")):
        load_config(path)


def test_the_history_settings_default_to_every_cluster_with_files_and_a_1s_floor(tmp_path: Path) -> None:
    from kafka_zk_audit.contract.settings import seconds_text

    history = load_config(None).history
    assert history.enabled is True and history.min_interval == timedelta(seconds=1)
    path = tmp_path / "history.yaml"
    path.write_text("history:\n  min_interval: 250ms\n")
    with pytest.raises(SettingsError) as error:
        load_config(path)
    assert str(error.value).count("\n") == 1 and "line 2: 'history.min_interval' is '250ms'" in str(error.value)
    assert 'write a duration: a number followed by s, m, h, d or w' in str(error.value)
    path.write_text("history:\n  enabled: false\n  min_interval: 0.25\n")
    changed = load_config(path).history
    assert changed.enabled is False and changed.min_interval == timedelta(milliseconds=250)
    assert [seconds_text(timedelta(seconds=s)) for s in (1, 0.25, 0, 90, 1e6)] == ["1", "0.25", "0", "90", "1000000"]
    assert parse_duration(seconds_text(changed.min_interval)) == changed.min_interval


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"history": {"enabled": "yes"}}, "'history.enabled' is 'yes'; write true or false"),
        ({"history": {"min_interval": -1}}, "'history.min_interval' is -1; write a duration"),
        ({"history": {"floor": "1s"}}, "unknown key 'history.floor'; the keys under 'history' are enabled, "
                                       "min_interval"),
        ({"history": "1s"}, "'history' must be a mapping"),
        ({"clusters": [{"name": "dr", "files": {"data_dir": "/zk"}, "overrides": {"history": {"enabled": False}}}]},
         "'clusters[0].overrides.history' cannot be overridden per cluster"),
    ],
)
def test_bad_history_settings_say_what_to_fix(raw: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(message)):
        parse_config(raw)


def test_the_snapshot_section_is_the_settable_subset_of_the_snapshot_options() -> None:
    from dataclasses import fields

    from kafka_zk_audit.contract.settings import SnapshotConfig
    from kafka_zk_audit.contract.snapshot_options import SETTINGS, SnapshotOptions

    assert list(SnapshotConfig.model_fields) == list(SETTINGS)
    assert set(SETTINGS) <= {option.name for option in fields(SnapshotOptions)}
    # the packaged defaults are the options' own: a run without a settings file walks as SnapshotOptions() does
    assert load_config(None).snapshot.model_dump() == {name: getattr(SnapshotOptions(), name) for name in SETTINGS}
    assert SnapshotOptions(**load_config(None).snapshot.model_dump()) == SnapshotOptions()


def test_alert_persistence_and_routes_default_to_today_and_override_per_cluster(tmp_path: Path) -> None:
    defaults = load_config(None)
    assert defaults.alerts.for_ == {} and defaults.alerts.routes == () and defaults.alert_routes() == ()
    assert defaults.alerts.pending_for("under_replicated") == timedelta(0)
    path = tmp_path / "routes.yaml"
    path.write_text(
        "alerts:\n  email_to: oncall@example.com\n  for: {under_replicated: 15m, default: 1m}\n  routes:\n"
        "    - severities: [critical]\n      pagerduty_conn_id: pd_kafka\n      opsgenie_conn_id: og_kafka\n"
        "    - slack_conn_id: slack_kafka\n"
        "clusters:\n  - name: eu\n    zk_conn_id: zk_eu\n    overrides:\n"
        "      alerts: {for: {offline_partition: 5m}, routes: [{severities: [warning], webhook_conn_id: hook_eu}]}\n"
        "  - name: us\n    zk_conn_id: zk_us\n")
    cfg = load_config(path)
    assert cfg.alerts.pending_for("under_replicated") == timedelta(minutes=15)
    assert cfg.alerts.pending_for("offline_partition") == timedelta(minutes=1)  # the default key
    mail, pagerduty, slack = cfg.alert_routes()
    assert mail.email_to == ("oncall@example.com",) and mail.takes("error", cfg.gate.gating_severities)
    assert not mail.takes("warning", cfg.gate.gating_severities)
    assert pagerduty.takes("critical", ()) and not pagerduty.takes("error", cfg.gate.gating_severities)
    assert slack.severities == () and slack.takes("critical", cfg.gate.gating_severities)
    eu, us = cfg.for_cluster("eu"), cfg.for_cluster("us")
    assert eu.alerts.pending_for("offline_partition") == timedelta(minutes=5)
    assert eu.alerts.pending_for("under_replicated") == timedelta(0)  # a cluster's `for` replaces the fleet's
    assert [r.webhook_conn_id for r in eu.alerts.routes] == ["hook_eu"] and us.alert_routes() == cfg.alert_routes()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"alerts": {"for": {"nope": "1m"}}}, "'alerts.for.nope' is 'nope', which is not a check id; use 'default'"),
        ({"alerts": {"for": {"under_replicated": "soon"}}},
         "'alerts.for.under_replicated' is 'soon'; write a duration"),
        ({"alerts": {"routes": [{"severities": ["critical"]}]}},
         "'alerts.routes[0]' is {'severities': ['critical']}; a route needs at least one of email_to, webhook_conn_id, "
         "slack_conn_id, pagerduty_conn_id, opsgenie_conn_id"),
        ({"alerts": {"routes": [{"severities": ["urgent"], "slack_conn_id": "s"}]}},
         "'alerts.routes[0].severities[0]' is 'urgent'; use one of critical, error, warning, info"),
        ({"alerts": {"routes": [{"slack_conn": "s"}]}}, "unknown key 'alerts.routes[0].slack_conn'; the keys under "
         "'alerts.routes[0]' are email_to, opsgenie_conn_id, pagerduty_conn_id, severities, slack_conn_id"),
        ({"alerts": {"routes": {"slack_conn_id": "s"}}}, "'alerts.routes' must be a list of routes"),
        ({"alerts": {"fro": {}}}, "the keys under 'alerts' are email_to, for, only_new, routes,"),
    ],
)
def test_bad_alert_settings_say_what_to_fix(raw: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(message)):
        parse_config(raw)


def test_events_are_off_by_default_and_watch_the_znodes_the_checks_read(tmp_path: Path) -> None:
    events = load_config(None).events
    assert events.enabled is False
    assert (events.quiet_period, events.max_delay, events.recheck_poll) == (
        timedelta(seconds=10), timedelta(seconds=60), timedelta(seconds=30))
    assert {"/brokers", "/admin", "/config", "/controller", "/consumers", "/isr_change_notification"} <= set(
        events.paths)
    assert events.ignore == ("/consumers/*/offsets/*",)
    path = tmp_path / "events.yaml"
    path.write_text("events:\n  enabled: true\n  quiet_period: 2s\n  max_delay: 2s\n  paths: [/brokers]\n")
    changed = load_config(path).events
    assert changed.enabled and changed.paths == ("/brokers",) and changed.max_delay == timedelta(seconds=2)
    assert changed.ignore == events.ignore  # the keys not given keep their defaults


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"events": {"quiet_period": "2m", "max_delay": "1m"}},
         "'events.max_delay' is '1m'; it must be at least quiet_period (120s)"),
        ({"events": {"enabled": True, "paths": []}}, "'events.paths' is []; enabled events need at least one"),
        ({"events": {"paths": ["brokers"]}}, "'events.paths[0]' is 'brokers'; a watched path is a znode path"),
        ({"events": {"enabled": "yes"}}, "'events.enabled' is 'yes'; write true or false"),
        ({"events": {"quiet": "1s"}}, "unknown key 'events.quiet'"),
    ],
)
def test_bad_events_settings_say_what_to_fix(raw: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(message)):
        parse_config(raw)
