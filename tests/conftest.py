"""Shared scenarios and runners. Nothing is skipped: these tests need the built native module."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result as CliResult

import ccbench
from ccbench.cli import cli as ccbench_cli

# The smallest useful scenario: one bulk TCP flow and a ping over an FQ-CoDel bottleneck.
TINY = """\
name = "tiny"
duration = "2s"
seed = 1

[[links]]
id = "bottleneck"
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "fq_codel" }

[[links]]
id = "ret"
rate = "10Mbit"
delay = "10ms"

[[flows]]
id = "f1"
kind = "tcp"
cc = "cubic"
path = ["bottleneck"]
reverse = ["ret"]

[[flows]]
id = "ping"
kind = "ping"
interval = "100ms"
path = ["bottleneck"]
reverse = ["ret"]
"""

# TINY with a second bulk flow, for per-flow rows and sharing.
TWO_FLOWS = TINY + """
[[flows]]
id = "f2"
kind = "tcp"
cc = "cubic"
path = ["bottleneck"]
reverse = ["ret"]
"""

#: One SCReAM flow through DualPI2, 4 s, with a named interval.
MEDIA = """
name = "media"
duration = "4s"
[[links]]
id = "bottleneck"
rate = "20Mbit"
delay = "10ms"
qdisc = { kind = "dualpi2" }
[[links]]
id = "ret"
rate = "20Mbit"
delay = "10ms"
[[flows]]
id = "scream"
kind = "media"
ecn = "ect1"
media = { mtu = 1360 }
path = ["bottleneck"]
reverse = ["ret"]
intervals = [{ name = "late", from = "2s", to = "4s" }]
"""


def line_of(text: str, needle: str) -> int:
    """1-based line number of the first line containing ``needle``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[..., Path]:
    """Write scenario text to ``tmp_path/<name>`` and return the path."""

    def write(text: str = TINY, name: str = "tiny.toml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def tiny_result() -> ccbench.Result:
    """One run of TWO_FLOWS, shared because runs are deterministic and results read-only."""
    return ccbench.run(TWO_FLOWS)


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., CliResult]:
    """Invoke the ccbench command in-process, in tmp_path, with stdout and stderr apart."""
    monkeypatch.chdir(tmp_path)

    def invoke(*args: object) -> CliResult:
        return CliRunner().invoke(ccbench_cli, [str(a) for a in args], catch_exceptions=False)

    return invoke


@pytest.fixture
def run_module(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m ccbench`` in a real process, to see exactly what a user sees."""

    def invoke(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ccbench", *map(str, args)],
            capture_output=True, text=True, cwd=tmp_path, timeout=120,
        )

    return invoke


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Nothing may be skipped: a skipped test is a failed session (a missing tool fails, it does not skip).

    ``CCBENCH_ALLOW_SKIPS=1`` lifts this for a local run without the tools.
    """
    import os

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter is not None else 0
    if skipped and os.environ.get("CCBENCH_ALLOW_SKIPS") != "1" and session.exitstatus == 0:
        if reporter is not None:
            reporter.write_line(f"{skipped} test(s) skipped: nothing may skip (set CCBENCH_ALLOW_SKIPS=1 to allow)",
                                red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
