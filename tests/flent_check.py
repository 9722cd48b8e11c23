"""The project's own flent-compatibility check: can flent 2.3.0 open a file and draw its plots?

Run as ``python tests/flent_check.py FILE.flent.gz [PLOT ...]`` with an
interpreter that has flent installed (``make test`` installs flent into the
test venv). Prints ``OK: <test> -p <plot>`` per plot that passes and
``FAIL: ...`` lines otherwise; exits 0 only if every check passed.

Three checks, because flent exits 0 and draws an empty figure on many errors:

1. structure: gzip'd JSON with what flent's loader dereferences without a
   guard (metadata NAME, TITLE, LOCAL_HOST, HOST, LENGTH, STEP_SIZE) plus what
   a real flent run records (TIME, T0, TOTAL_LENGTH, HOSTS,
   TEST_PARAMETERS); ``version`` at most 4; NAME one of flent's test
   configurations; ``x_values`` non-empty and non-decreasing; each
   ``results`` series as long as ``x_values``; ``raw_values`` entries
   carrying a time ``t``;
2. the flent command line (``flent -i FILE -p PLOT -o PNG``) exits 0, prints
   no error or traceback and writes a non-empty PNG;
3. flent's Python API loads the file, draws the plot, and every series of
   the plot that is not a socket-stats (``raw_key``) series holds data.

Default plots by test name: rrul*: all_scaled and ping_cdf; ping: ping and
ping_cdf; otherwise totals and ping_cdf.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import subprocess
import sys
import tempfile
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

REQUIRED_META = ("NAME", "TIME", "LENGTH", "TOTAL_LENGTH", "STEP_SIZE", "HOST", "HOSTS", "TEST_PARAMETERS", "T0")
NULLABLE_META = ("TITLE", "LOCAL_HOST")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def structure_problems(doc: Any) -> list[str]:
    """What is wrong with a decoded flent file, as messages (empty if nothing)."""
    import flent

    if not isinstance(doc, dict):
        return ["the file is not a JSON object"]
    missing = [k for k in ("metadata", "version", "x_values", "results", "raw_values") if k not in doc]
    if missing:
        return [f"missing top-level key {k!r}" for k in missing]
    out = []
    if not isinstance(doc["version"], int) or doc["version"] > 4:
        out.append(f"version must be an integer <= 4, not {doc['version']!r}")
    md = doc["metadata"]
    out += [f"metadata.{k} is missing (null is allowed)" for k in NULLABLE_META if k not in md]
    out += [f"metadata.{k} is missing or null" for k in REQUIRED_META if md.get(k) is None]
    params = md.get("TEST_PARAMETERS")
    if not isinstance(params, dict):
        out.append("metadata.TEST_PARAMETERS must be an object")
        params = {}
    if md.get("NAME") == "tcp_nup" and "upload_streams" not in params:
        out.append("a tcp_nup file needs TEST_PARAMETERS.upload_streams")
    if md.get("NAME") == "tcp_ndown" and "download_streams" not in params:
        out.append("a tcp_ndown file needs TEST_PARAMETERS.download_streams")
    if not isinstance(md.get("HOSTS"), list):
        out.append("metadata.HOSTS must be a list")
    for k in ("TIME", "T0"):
        if isinstance(md.get(k), str):
            try:
                datetime.strptime(md[k], TIME_FORMAT)
            except ValueError:
                out.append(f"metadata.{k} = {md[k]!r} is not in flent's time format {TIME_FORMAT}")
    tests = Path(flent.__file__).parent / "tests"
    if not (tests / f"{md.get('NAME')}.conf").is_file():
        out.append(f"metadata.NAME = {md.get('NAME')!r} names no flent test")
    x = doc["x_values"]
    if not isinstance(x, list) or not x:
        out.append("x_values must be a non-empty list")
        x = []
    elif any(b < a for a, b in zip(x, x[1:])):
        out.append("x_values must not decrease")
    results = doc["results"]
    if not isinstance(results, dict) or not results:
        out.append("results must be a non-empty object")
    else:
        for k, v in results.items():
            if not isinstance(v, list) or len(v) != len(x):
                out.append(f"results[{k!r}] has {len(v) if isinstance(v, list) else 'no'} values for "
                           f"{len(x)} x_values")
    raw = doc["raw_values"]
    if not isinstance(raw, dict):
        out.append("raw_values must be an object")
    else:
        for k, v in raw.items():
            if not isinstance(v, list):
                out.append(f"raw_values[{k!r}] must be a list")
            elif any(not isinstance(e, dict) or "t" not in e for e in v):
                out.append(f"raw_values[{k!r}] has entries without a time 't'")
    return out


def default_plots(name: str) -> list[str]:
    if name.startswith("rrul"):
        return ["all_scaled", "ping_cdf"]
    if name == "ping":
        return ["ping", "ping_cdf"]
    return ["totals", "ping_cdf"]


def cli_problems(path: Path, plot: str, out_png: Path) -> list[str]:
    """Draw ``plot`` with the flent command of this interpreter's environment."""
    exe = Path(sys.executable).with_name("flent")
    cmd = [str(exe) if exe.exists() else "flent", "-i", str(path), "-p", plot, "-o", str(out_png)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    log = done.stdout + done.stderr
    bad = [line for line in log.splitlines() if any(w in line for w in ("ERROR", "Traceback", "Exception"))]
    if done.returncode != 0 or bad:
        return [f"flent -p {plot} exited {done.returncode}: " + " | ".join(bad[:5] or log.splitlines()[-5:])]
    if not out_png.is_file() or out_png.stat().st_size == 0:
        return [f"flent -p {plot} wrote no PNG"]
    return []


def api_problems(path: Path, plot: str, out_png: Path, warns: list[str]) -> list[str]:
    """Draw ``plot`` through flent's Python API; every non-socket-stats series must carry data.

    Empty socket-stats series are appended to ``warns`` instead.
    """
    import numpy as np
    from flent import formatters, resultset, settings

    logging.disable(logging.CRITICAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = settings.load(["-i", str(path), "-p", plot, "-o", str(out_png)])
        r = resultset.load(str(path))
        s.update(r.meta())
        s.load_test(informational=True)
        s.compute_missing_results(r)
        f = formatters.new(s)
        f.format([r])
        ok, lengths = f.verify()
        if not ok:
            return [f"plot {plot} drew no lines (lines per axis: {lengths})"]
        out = []
        for config in getattr(f.plotter, "configs", []):
            for series in config.get("series", []):
                try:
                    arr = np.asarray(f.plotter.get_series(series, r, config), dtype=float)
                    empty = arr.size == 0 or arr.ndim < 2 or bool(np.all(np.isnan(arr[1])))
                except Exception:  # flent raises various errors for a series it cannot find
                    empty = True
                # Socket-stats series (raw_key) may be empty: aggregates have none, and files
                # without socket stats are valid flent files.
                if empty:
                    what = f"plot {plot}: series {series.get('data')!r}"
                    if series.get("raw_key"):
                        warns.append(f"{what} raw_key={series['raw_key']!r} has no data")
                    else:
                        out.append(f"{what} has no data")
    return out


def check(path: Path, plots: list[str]) -> list[str]:
    """Every check on ``path``; returns the OK and FAIL lines."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fp:
            doc = json.load(fp)
    except (OSError, ValueError) as e:
        return [f"FAIL: not gzip'd JSON: {e}"]
    problems = structure_problems(doc)
    if problems:
        return [f"FAIL: {p}" for p in problems]
    name = doc["metadata"]["NAME"]
    lines = []
    with tempfile.TemporaryDirectory(prefix="flent-check-") as tmp:
        for plot in plots or default_plots(name):
            found = cli_problems(path, plot, Path(tmp) / f"cli_{plot}.png")
            warns: list[str] = []
            found = found or api_problems(path, plot, Path(tmp) / f"api_{plot}.png", warns)
            lines += [f"WARN: {w}" for w in warns]
            lines += [f"FAIL: {p}" for p in found] or [f"OK: {name} -p {plot}"]
    return lines


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: flent_check.py FILE.flent.gz [PLOT ...]", file=sys.stderr)
        return 2
    os.environ.setdefault("MPLBACKEND", "Agg")
    lines = check(Path(argv[0]), argv[1:])
    print("\n".join(lines))
    ok = [line for line in lines if line.startswith("OK: ")]
    return 0 if ok and not any(line.startswith("FAIL: ") for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
