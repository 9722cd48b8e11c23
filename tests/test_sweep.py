"""Sweeps: every run on disk, failures recorded, resume, determinism across executors, Dask."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ccbench
from ccbench.sweep import runner as sweep
from ccbench.plan.suite_file import load_suite
from ccbench.sweep.runner import SweepInterrupted, read_manifest, resume_command, run_suite
from conftest import TINY

SWEEP = """\
name = "sweep"
base = "tiny.toml"

[[axes]]
name = "rate"
values = ["5Mbit", "10Mbit"]
key = "links.bottleneck.rate"

[[axes]]
name = "seed"
values = [1, 2]
key = "seed"

[report]
plots = []
suite_plots = []
"""

# Eight runs that take long enough (~0.5 s each) to interrupt a sweep in the middle.
LONGER = """\
name = "longer"
base = "tiny.toml"
set = ['duration="20s"', 'links.bottleneck.rate="100Mbit"', 'links.ret.rate="100Mbit"']

[[axes]]
name = "seed"
values = [1, 2, 3, 4, 5, 6, 7, 8]
key = "seed"

[report]
suite_plots = []
"""


@pytest.fixture
def write_suite(tmp_path: Path) -> Callable[..., Path]:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")

    def write(text: str = SWEEP, name: str = "suite.toml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


def summaries(suite_dir: Path) -> dict[str, dict[str, Any]]:
    """summary.json of every finished run, by key, without the engine's wall time."""
    out = {}
    for d in sorted((suite_dir / "runs").iterdir()):
        if (d / "summary.json").is_file():
            s = json.loads((d / "summary.json").read_text())
            s["engine"].pop("wall_s")
            out[d.name] = s
    return out


def mtimes(suite_dir: Path) -> dict[str, tuple[int, int]]:
    """(directory, summary.json) modification times of each finished run."""
    return {d.name: (d.stat().st_mtime_ns, (d / "summary.json").stat().st_mtime_ns)
            for d in (suite_dir / "runs").iterdir() if (d / "summary.json").is_file()}


def counting(execute: Callable[[dict[str, Any]], dict[str, Any]], calls: list[str]) -> Callable[..., Any]:
    """``execute`` that notes the key of each run it is given."""

    def wrapped(task: dict[str, Any]) -> dict[str, Any]:
        calls.append(task["key"])
        return execute(task)

    return wrapped


def test_sweep_writes_each_run_and_a_manifest(write_suite, tmp_path: Path) -> None:
    res = run_suite(write_suite(), tmp_path / "out", jobs=1, progress=False, report=False)
    root = tmp_path / "out" / "sweep"
    assert res.dir == root and (res.ok, res.failed, res.pending) == (4, 0, 0)
    plan = load_suite(tmp_path / "suite.toml").plan()
    assert sorted(p.name for p in (root / "runs").iterdir()) == sorted(p.key for p in plan)  # nothing temporary
    for p in plan:
        run_dir = root / "runs" / p.key
        assert (run_dir / "scenario.toml").read_text() == p.scenario
        summary = ccbench.load(run_dir).summary
        assert summary["seed"] == p.values["seed"]
        assert summary["links"][0]["rate_mbps"] == float(p.values["rate"].removesuffix("Mbit"))
        assert not (run_dir / "timeseries.png").exists()  # plots = []
    manifest = json.loads((root / "suite.json").read_text())
    assert manifest["suite"] == "sweep" and manifest["ccbench_version"] == ccbench.__version__
    assert manifest["counts"] == {"ok": 4, "failed": 0, "pending": 0}
    assert "git_commit" in manifest and manifest["finished"] and manifest["wall_s"] > 0
    assert [r["key"] for r in manifest["runs"]] == [p.key for p in plan]
    assert all(r["status"] == "ok" and r["wall_s"] > 0 and r["error"] is None for r in manifest["runs"])
    assert manifest["runs"][3]["values"] == {"rate": "10Mbit", "seed": 2}
    assert manifest["runs"][3]["overrides"] == ['links.bottleneck.rate="10Mbit"', "seed=2"]


def test_worker_processes_match_one_process(write_suite, tmp_path: Path) -> None:
    suite = write_suite()
    one = run_suite(suite, tmp_path / "one", jobs=1, progress=False, report=False)
    two = run_suite(suite, tmp_path / "two", jobs=2, progress=False, report=False)
    assert two.ok == 4 and one.ok == 4
    assert summaries(one.dir) == summaries(two.dir)


def test_resume_after_an_interrupt_redoes_nothing_finished(write_suite, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = sweep.execute

    def interrupt_third(task: dict[str, Any]) -> dict[str, Any]:
        calls.append(task["key"])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(task)

    monkeypatch.setattr(sweep, "execute", interrupt_third)
    with pytest.raises(SweepInterrupted) as stopped:
        run_suite(write_suite(), tmp_path / "out", jobs=1, progress=False, report=False)
    res = stopped.value.result
    assert (res.ok, res.failed, res.pending, res.interrupted) == (2, 0, 2, True)
    root = res.dir
    manifest = read_manifest(root)
    assert manifest.data["interrupted"] is True
    assert [r.status for r in manifest.runs] == ["ok", "ok", "pending", "pending"]
    before = mtimes(root)
    assert sorted(before) == sorted(calls[:2])

    calls.clear()
    monkeypatch.setattr(sweep, "execute", counting(real, calls))
    time.sleep(0.02)  # a rewrite would show in the mtimes
    res = run_suite(tmp_path / "suite.toml", tmp_path / "out", jobs=1, resume=True, progress=False, report=False)
    assert (res.ok, res.reused, res.interrupted) == (4, 2, False)
    assert sorted(calls) == sorted(set(r.key for r in res.runs) - set(before))
    after = mtimes(root)
    assert len(after) == 4
    assert {k: after[k] for k in before} == before  # finished runs untouched


def test_a_changed_suite_reruns_only_what_changed(write_suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = write_suite()
    first = run_suite(suite, tmp_path / "out", jobs=1, progress=False, report=False)
    calls: list[str] = []
    real = sweep.execute
    monkeypatch.setattr(sweep, "execute", counting(real, calls))
    write_suite(SWEEP.replace('"10Mbit"]', '"20Mbit"]'))
    second = run_suite(suite, tmp_path / "out", jobs=1, resume=True, progress=False, report=False)
    assert len(calls) == 2 and all("rate=20Mbit" in k for k in calls)
    assert second.reused == 2 and second.ok == 4
    assert [r.key for r in read_manifest(second.dir).runs] == [r.key for r in second.runs]
    assert {r.key for r in first.runs} & {r.key for r in second.runs} == {k for k in mtimes(first.dir)
                                                                          if "5Mbit" in k}


def test_a_failing_run_does_not_lose_the_others(write_suite, tmp_path: Path, run_cli) -> None:
    # rate 7Mbit: an override the scenario rejects (fails before running);
    # 10Mbit seed 2: its result directory is taken by a foreign one (fails in the worker).
    text = SWEEP.replace('["5Mbit", "10Mbit"]', '["5Mbit", "10Mbit", "7MB"]')
    suite = write_suite(text)
    blocked = next(p.key for p in load_suite(suite).plan() if p.values == {"rate": "10Mbit", "seed": 2})
    foreign = tmp_path / "out" / "sweep" / "runs" / blocked
    foreign.mkdir(parents=True)
    (foreign / "thesis.tex").write_text("keep")

    result = run_cli("suite", "run", suite, "-j", "2", "-o", "out/")
    assert result.exit_code == 1, result.stderr
    manifest = read_manifest(tmp_path / "out" / "sweep")
    status = {r.key: r for r in manifest.runs}
    failed = sorted(k for k, r in status.items() if r.status == "failed")
    assert len(failed) == 3 and blocked in failed
    assert sum(r.status == "ok" for r in manifest.runs) == 3
    for key in failed:
        if "rate=7MB" in key:
            assert 'links[0].rate: unknown rate unit "mb"' in status[key].error
    assert "exists and is not a ccbench result directory" in status[blocked].error
    assert (foreign / "thesis.tex").read_text() == "keep"
    for key, r in status.items():
        assert (tmp_path / "out" / "sweep" / "runs" / key / "summary.json").is_file() == (r.status == "ok")
    assert "6 runs: 3 ok, 3 failed" in result.stdout
    assert f"failed: {blocked}: " in result.stderr
    assert "report: " in result.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill"])
def test_an_interrupted_sweep_resumes_without_redoing_finished_runs(write_suite, tmp_path: Path, run_cli,
                                                                     sig: signal.Signals) -> None:
    write_suite(LONGER)
    out = tmp_path / "out"
    runs = out / "longer" / "runs"
    cmd = [sys.executable, "-m", "ccbench", "suite", "run", "suite.toml", "-j", "2", "-o", "out/"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(runs.glob("*/summary.json")) and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    if sig == signal.SIGINT:
        assert proc.returncode == 130, stderr
        assert "resume with: ccbench suite run suite.toml --resume -o out/ -j 2" in stderr
        assert read_manifest(out / "longer").data["interrupted"] is True
    finished = mtimes(out / "longer")
    assert 1 <= len(finished) < 8, "the sweep was not interrupted in the middle"

    time.sleep(0.02)
    result = run_cli("suite", "run", "suite.toml", "--resume", "-j", "2", "-o", "out/")
    assert result.exit_code == 0, result.stderr
    assert f"8 runs: 8 ok ({len(finished)} from an earlier sweep)" in result.stdout
    after = mtimes(out / "longer")
    assert len(after) == 8 and sorted(p.name for p in runs.iterdir()) == sorted(after)  # no temporaries left
    assert {k: after[k] for k in finished} == finished


def test_dask_local_cluster_gives_the_same_summaries(write_suite, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    suite = write_suite(SWEEP.replace("\nplots = []\n", '\nplots = ["timeseries"]\n'))  # per-run plots travel back too
    local = run_suite(suite, tmp_path / "local", jobs=1, progress=False, report=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        remote = run_suite(suite, tmp_path / "dask", dask=client, progress=False, report=False)
    assert remote.ok == 4 and remote.failed == 0
    assert summaries(remote.dir) == summaries(local.dir)
    for run in remote.runs:
        names = sorted(p.name for p in (remote.dir / "runs" / run.key).iterdir())
        assert names == sorted(p.name for p in (local.dir / "runs" / run.key).iterdir())
        assert "timeseries.png" in names
    assert read_manifest(remote.dir).data["executor"].startswith("dask")


def test_cli_dask_local_starts_a_local_cluster(write_suite, run_cli) -> None:
    pytest.importorskip("distributed")
    write_suite()
    result = run_cli("suite", "run", "suite.toml", "--dask", "local", "-j", "1", "-o", "out/")
    assert result.exit_code == 0, result.stderr
    assert "4 runs: 4 ok, 0 failed" in result.stdout
    assert len(summaries(Path("out/sweep"))) == 4


def test_the_report_code_loads_while_the_runs_go(write_suite, tmp_path: Path) -> None:
    """A sweep imports its report's code and NumPy on a thread while its workers run
    (`REPORT_MODULES`): rendering the report afterwards imports none of them."""
    suite = write_suite()
    code = (
        "import sys\n"
        "import ccbench.report.suite as rs\n"
        "from ccbench.sweep.runner import run_suite\n"
        "new, render = [], rs.render\n"
        "def spy(*a, **k):\n"
        "    before = set(sys.modules)\n"
        "    out = render(*a, **k)\n"
        "    new.extend(sorted(set(sys.modules) - before))\n"
        "    return out\n"
        "rs.render = spy\n"
        "if __name__ == '__main__':\n"
        f"    run_suite({str(suite)!r}, {str(tmp_path / 'out')!r}, jobs=2, progress=False)\n"
        "    print([m for m in new if m.split('.')[0] == 'numpy' or m.startswith('ccbench.report')])\n"
    )
    script = tmp_path / "sweep_imports.py"
    script.write_text(code, encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_resume_command_quotes_what_it_must() -> None:
    assert resume_command("my suite.toml", "res", jobs=2, overrides=['duration="5s"']) == (
        "ccbench suite run 'my suite.toml' --resume -o res -j 2 --set 'duration=\"5s\"'")


def test_the_progress_bar_counts_every_failed_run(write_suite, tmp_path: Path) -> None:
    """Runs that fail before running (overrides the scenario rejects) count in the bar as in the summary."""
    import io
    import re

    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, color_system=None, width=200)
    suite = write_suite(SWEEP.replace('["5Mbit", "10Mbit"]', '["5Mbit", "7MB"]'))
    res = run_suite(suite, tmp_path / "out", jobs=1, progress=True, report=False, console=console)
    assert res.failed == 2
    counts = [int(n) for n in re.findall(r"(\d+) failed", buf.getvalue())]
    assert counts and counts[-1] == res.failed and min(counts) == 2  # from the start, not only at the end
    assert buf.getvalue().count("failed: sweep") == 0 or "rate=7MB" in buf.getvalue()


def test_two_sweeps_started_at_once_never_both_get_the_directory(tmp_path: Path) -> None:
    """The lock is an OS lock (flock): of two takers at the same instant exactly one wins, every time."""
    import threading

    from ccbench.core.errors import CcbenchError

    root = tmp_path / "suite"
    root.mkdir()
    for _ in range(50):
        barrier = threading.Barrier(2)
        got: list[bool] = []

        def take() -> None:
            barrier.wait()
            try:
                with sweep._locked(root):
                    got.append(True)
                    time.sleep(0.02)
            except CcbenchError as e:
                assert "another sweep" in str(e)
                got.append(False)

        threads = [threading.Thread(target=take) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(got) == [False, True]
    with sweep._locked(root):  # released after each sweep: it can be taken again
        pass


def test_a_killed_sweep_leaves_no_lock_behind(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    root.mkdir()
    code = ("import sys, time; from pathlib import Path; from ccbench.sweep import runner as sweep\n"
            f"with sweep._locked(Path({str(root)!r})):\n    print('held', flush=True); time.sleep(60)\n")
    from ccbench.core.errors import CcbenchError

    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with pytest.raises(CcbenchError, match=f"process {proc.pid}"):
            with sweep._locked(root):
                pass
        proc.kill()
    with sweep._locked(root):
        pass


def test_dry_run_states_the_size_at_once_and_with_resume_which_runs_are_reused(write_suite, tmp_path: Path,
                                                                                run_cli) -> None:
    suite = write_suite()
    first = run_suite(suite, tmp_path / "out", jobs=1, progress=False, report=False)
    done = first.runs[0]
    import shutil

    for rec in first.runs[1:]:
        shutil.rmtree(first.dir / rec.dir)
    result = run_cli("suite", "run", suite, "--dry-run", "--resume", "-o", "out/")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[0] == "sweep: 4 runs (2 rate x 2 seed)"
    lines = dict(line.split("\t")[:2] for line in result.stdout.splitlines())
    assert lines == {r.key: ("reused" if r.key == done.key else "to run") for r in first.runs}
    assert "--resume reuses 1 of 4 runs" in result.stderr


def test_dry_run_of_a_huge_suite_prints_its_size_before_resolving_anything(write_suite, tmp_path: Path) -> None:
    values = ", ".join(str(i) for i in range(1000))
    suite = write_suite(SWEEP + f'\n[[axes]]\nname = "a"\nvalues = [{values}]\nkey = "seed"\n'
                                f'\n[[axes]]\nname = "b"\nvalues = [{values}]\nkey = "seed"\n')
    t0 = time.monotonic()
    with subprocess.Popen([sys.executable, "-m", "ccbench", "suite", "run", str(suite), "--dry-run"],
                          cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None and proc.stdout is not None
        first = proc.stderr.readline()
        assert first.startswith("sweep: 4,000,000 runs (2 rate x 2 seed x 1000 a x 1000 b)"), first
        line = proc.stdout.readline()
        assert line.startswith("rate=5Mbit,seed=1,a=0,b=0-"), line  # streams: no list of 4 million first
        assert time.monotonic() - t0 < 20
        proc.kill()


def test_the_forkserver_starts_before_the_heavy_imports_and_only_for_more_than_one_job() -> None:
    # A fresh interpreter: this one has Polars and a forkserver already.
    code = """
import sys
import ccbench.core.workers as w
from multiprocessing import forkserver
heavy = [m for m in ("polars", "matplotlib", "numpy", "pyarrow") if m in sys.modules]
w.start_early(1)
one = forkserver._forkserver._forkserver_pid
w.start_early(2)
two = forkserver._forkserver._forkserver_pid
print(heavy, one is None, two is not None)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split("\n")[0] == "[] True True", out.stdout + out.stderr
