"""suite.json: the record of a suite's planned runs, written as a sweep runs them and read by its report.

A sweep's directory holds ``suite.json`` and ``runs/<key>/`` (one result
directory per run); see :mod:`ccbench.sweep.runner` for how they are written.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ccbench._core import version
from ccbench.core.files import write_atomic
from ccbench.plan.suite import Suite, SuiteSet, value_key

__all__ = ["MANIFEST", "RUNS_DIR", "Manifest", "ManifestWriter", "RunRecord", "read_manifest", "write_set_manifest"]

MANIFEST = "suite.json"
RUNS_DIR = "runs"
FORMAT = 1
_SAVE_EVERY_S = 1.0


@dataclass
class RunRecord:
    """One run of a sweep as suite.json lists it."""

    key: str
    values: dict[str, Any]
    overrides: list[str]
    hash: str
    status: str = "pending"  # "ok", "failed" or "pending" (not run yet)
    error: str | None = None
    wall_s: float | None = None  # worker wall time: simulate + save (+ plot)
    reused: bool = False  # finished by an earlier sweep (--resume)

    @property
    def dir(self) -> str:
        return f"{RUNS_DIR}/{self.key}"

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "dir": self.dir, "values": self.values, "overrides": self.overrides,
                "hash": self.hash, "status": self.status, "error": self.error, "wall_s": self.wall_s,
                "reused": self.reused}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RunRecord:
        return cls(d["key"], dict(d.get("values", {})), list(d.get("overrides", [])), d.get("hash", ""),
                   d.get("status", "pending"), d.get("error"), d.get("wall_s"), bool(d.get("reused")))


class ManifestWriter:
    """suite.json of a sweep being run: its runs' records, rewritten as they change."""

    def __init__(self, root: Path, suite: Suite, records: list[RunRecord], overrides: Sequence[str],
                 executor: str, started: float) -> None:
        self.path = root / MANIFEST
        self.suite = suite
        self.records = {r.key: r for r in records}
        self.overrides = list(overrides)
        self.executor = executor
        self.started = started
        self.finished: float | None = None
        self.wall_s = 0.0
        self.interrupted = False
        self.git = _git_commit()
        self._saved = 0.0

    def finish(self, wall_s: float, interrupted: bool) -> None:
        self.finished = time.time()
        self.wall_s = wall_s
        self.interrupted = interrupted
        self.save()

    def save(self, *, throttle: bool = False) -> None:
        now = time.monotonic()
        if throttle and now - self._saved < _SAVE_EVERY_S:
            return
        self._saved = now
        s = self.suite
        counts = {k: sum(r.status == k for r in self.records.values()) for k in ("ok", "failed", "pending")}
        doc = {
            "format": FORMAT,
            "suite": s.name,
            "description": s.description,
            "suite_file": s.file,
            "suite_text": s.text,
            "set": self.overrides,
            "ccbench_version": version(),
            "git_commit": self.git,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "executor": self.executor,
            "started": _iso(self.started),
            "finished": _iso(self.finished) if self.finished else None,
            "wall_s": round(self.wall_s, 3),
            "interrupted": self.interrupted,
            "axes": [{"name": a.name, "label": a.label, "values": list(a.values),
                      "labels": {value_key(v): a.label_of(v) for v in a.values}} for a in s.axes],
            "counts": counts,
            "runs": [r.to_json() for r in self.records.values()],
        }
        write_atomic(self.path, json.dumps(doc, indent=1) + "\n")


@dataclass
class Manifest:
    """suite.json as read back."""

    data: dict[str, Any]
    runs: list[RunRecord] = field(default_factory=list)


def read_manifest(suite_dir: str | os.PathLike[str]) -> Manifest:
    """The suite.json of a sweep's directory."""
    path = Path(suite_dir) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(2, f"not a suite result directory (no {MANIFEST})", str(suite_dir))
    from ccbench.core.errors import ResultError

    damaged = f"{path}: damaged, not a ccbench suite manifest"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise ResultError(f"{damaged} ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("runs", []), list):
        raise ResultError(f"{damaged} (expected an object with a list of runs)")
    try:
        return Manifest(data, [RunRecord.from_json(r) for r in data.get("runs", [])])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ResultError(f"{damaged} (a run: {e!r})") from None


def write_set_manifest(root: Path, suite: SuiteSet, overrides: Sequence[str], started: float) -> None:
    """A suite of suites' suite.json: what it is and its parts' directories (each has its own suite.json)."""
    doc = {"format": FORMAT, "suite": suite.name, "description": suite.description, "suite_file": suite.file,
           "suite_text": suite.text, "set": list(overrides), "ccbench_version": version(),
           "git_commit": _git_commit(), "started": _iso(started), "parts": [p.name for p in suite.parts]}
    write_atomic(root / MANIFEST, json.dumps(doc, indent=1) + "\n")




def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


def _git_commit() -> str | None:
    """The commit of the ccbench source tree this package runs from, if it is a git checkout."""
    package = Path(__file__).resolve().parents[1]  # ccbench/, beside this subpackage
    try:
        top = subprocess.run(["git", "-C", str(package), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, timeout=10)
        if top.returncode != 0 or Path(top.stdout.strip()) / "python" / "ccbench" != package:
            return None  # installed, or inside some other repository
        head = subprocess.run(["git", "-C", str(package), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(package), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None
