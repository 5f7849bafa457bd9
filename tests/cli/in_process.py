"""The command line's ``main`` run in the test's own process: its exit code and what it printed, without the new
interpreter that imports the package for each call (about 2 s). Each test module still runs the installed console
script itself at least once (tests/cli/console_script.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from kafka_zk_audit.cli.main import main


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
             env: dict[str, str] | None = None) -> Ran:
    """``kafka-zk-audit ARGV`` in-process, with Airflow's and the project's variables unset (as the subprocess
    tests run it) and ``env`` set."""
    for key in [k for k in os.environ if k.startswith(("AIRFLOW", "KAFKA_ZK_AUDIT"))]:
        monkeypatch.delenv(key)
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code if isinstance(exit_.code, int) else 2
    printed = capsys.readouterr()
    return Ran(code, printed.out, printed.err)
