"""flent export: the file's structure, and flent 2.3.0 itself opening and drawing it.

The flent checks run the project's own checker, tests/flent_check.py, with
flent 2.3.0 installed in the test venv (``make test`` installs it): flent's
command line and its Python API must open the file and draw each plot.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ccbench
from ccbench.formats import flent

REPO = Path(__file__).resolve().parents[1]
CHECKER = REPO / "tests" / "flent_check.py"
FLENT_PIN = "2.3.0"

LINKS = """\
seed = 1

[[links]]
id = "bottleneck"
rate = "20Mbit"
delay = "10ms"
qdisc = { kind = "fq_codel" }

[[links]]
id = "ret"
rate = "20Mbit"
delay = "10ms"
"""


def tcp(fid: str, *, count: int = 1, dscp: int = 0, path: str = "bottleneck", reverse: str = "ret",
        extra: str = "") -> str:
    return (f'\n[[flows]]\nid = "{fid}"\nkind = "tcp"\ncc = "cubic"\ncount = {count}\ndscp = {dscp}\n'
            f'path = ["{path}"]\nreverse = ["{reverse}"]\n{extra}')


def ping(fid: str, *, dscp: int = 0, interval: str = "100ms", extra: str = "") -> str:
    return (f'\n[[flows]]\nid = "{fid}"\nkind = "ping"\ndscp = {dscp}\ninterval = "{interval}"\n'
            f'path = ["bottleneck"]\nreverse = ["ret"]\n{extra}')


def scenario(name: str, duration: str, *flows: str) -> str:
    head = f'name = "{name}"\ndescription = "{name} for the flent tests"\nduration = "{duration}"\n'
    return head + LINKS + "".join(flows)


# Started at 0 exactly (no start jitter): its first series row is the start.
ONE_UP = scenario("one-up", "3s", tcp("bulk", extra='start_jitter = "0s"\n'), ping("ping"))
THREE_UP = scenario("three-up", "4s", tcp("bulk", count=3), ping("ping"))
PING_ONLY = scenario("ping-only", "3s", ping("ping", extra='start = "0.5s"\n'))
# 8 flows as rrul has them: the uploads on "bottleneck", the downloads on "ret".
RRUL = scenario(
    "rrul-like", "3s",
    *(tcp(f"up_{c}", dscp=d) for c, d in (("ef", 46), ("be", 0), ("cs5", 40), ("bk", 8))),
    *(tcp(f"down_{c}", dscp=d, path="ret", reverse="bottleneck") for c, d in (("bk", 8), ("cs5", 40), ("be", 0),
                                                                               ("ef", 46))),
    ping("icmp"), ping("voice", dscp=46),
)


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Simulate a scenario once per session and return its saved result directory."""
    cache: dict[str, Path] = {}

    def get(text: str) -> Path:
        if text not in cache:
            out = tmp_path_factory.mktemp("runs") / "run"
            ccbench.run(text).save(out, plot=False)
            cache[text] = out
        return cache[text]

    return get


@pytest.fixture(scope="session")
def flent_venv() -> Path:
    """The environment of this interpreter, which must hold flent 2.3.0 (``make test`` installs it)."""
    import importlib.metadata

    try:
        found = importlib.metadata.version("flent")
    except importlib.metadata.PackageNotFoundError:
        found = None
    if found != FLENT_PIN:
        pytest.fail(f"the flent tests need flent {FLENT_PIN} in this venv (found {found}): "
                    f"{sys.executable} -m pip install flent=={FLENT_PIN}  (make test does it)")
    return Path(sys.prefix)


def check_with_flent(venv: Path, path: Path, *plots: str) -> str:
    """Run the project's flent check (tests/flent_check.py) on ``path``; return its output."""
    done = subprocess.run([str(venv / "bin" / "python"), str(CHECKER), str(path), *plots], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    for plot in plots:
        assert f"-p {plot}" in out, out
    assert out.count("OK: ") == len(plots), out
    return out


def read(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f, parse_constant=lambda c: pytest.fail(f"{c} in the file"))
    return doc


def assert_flent_structure(doc: dict[str, Any], result: ccbench.Result, name: str, series: list[str]) -> None:
    """What flent 2.3.0 needs (flent-format.md §2-§5), and that the values come from the run."""
    assert doc["version"] == 4
    md = doc["metadata"]
    assert md["NAME"] == name
    for key in ("TITLE", "LOCAL_HOST", "HOST", "HOSTS", "LENGTH", "TOTAL_LENGTH", "STEP_SIZE", "TIME", "T0",
                "TEST_PARAMETERS", "FLENT_VERSION", "IP_VERSION", "SERIES_META", "FAILED_RUNNERS",
                "DATA_FILENAME", "BATCH_NAME", "BATCH_TIME", "BATCH_TITLE", "BATCH_UUID", "CCBENCH"):
        assert key in md, key
    summary = result.summary
    assert md["TITLE"].startswith(summary["scenario"]) and "for the flent tests" in md["TITLE"]
    assert md["LOCAL_HOST"] == "ccbench" and md["HOSTS"] == [md["HOST"]]
    assert md["LENGTH"] == md["TOTAL_LENGTH"] == summary["duration_s"]
    assert md["FLENT_VERSION"] == "2.3.0" and md["IP_VERSION"] == 4 and md["FAILED_RUNNERS"] == 0
    assert md["T0"] == md["TIME"] == "2000-01-01T00:00:00.000000Z"
    t0 = datetime.strptime(md["T0"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
    ccb = md["CCBENCH"]
    assert (ccb["version"], ccb["scenario"], ccb["seed"]) == (ccbench.__version__, summary["scenario"], summary["seed"])

    step = md["STEP_SIZE"]
    x = doc["x_values"]
    assert len(x) == math.floor(summary["duration_s"] / step + 1e-9) + 1
    assert x == pytest.approx([i * step for i in range(len(x))])
    assert set(series) <= set(doc["results"])
    for key, values in doc["results"].items():
        assert len(values) == len(x), key
        assert all(v is None or math.isfinite(v) for v in values), key
    for key in series:
        assert key in doc["raw_values"] and key in md["SERIES_META"], key
        assert any(v is not None for v in doc["results"][key]), key
    for key, raw in doc["raw_values"].items():
        times = [s["t"] for s in raw]
        assert times == sorted(times), key
        assert all(t0 <= t <= t0 + summary["duration_s"] + 1 for t in times), key


def test_one_tcp_flow_is_tcp_1up_and_flent_draws_it(run_dir, flent_venv, tmp_path) -> None:
    run = run_dir(ONE_UP)
    written = flent.export(run, tmp_path / "one.flent.gz")
    assert written.test == "tcp_1up" and written.notes == []
    doc, result = read(written.path), ccbench.load(run)
    assert_flent_structure(doc, result, "tcp_1up", ["TCP upload", "Ping (ms) ICMP"])
    md = doc["metadata"]
    assert md["TEST_PARAMETERS"]["cc_algo"] == "cubic" and md["DATA_FILENAME"] == "one.flent.gz"
    for sub in ("tcp_cwnd", "tcp_rtt", "tcp_delivery_rate", "tcp_pacing_rate"):
        assert f"TCP upload::{sub}" in doc["results"]
    assert "TCP upload::tcp_rtt_var" not in doc["results"]  # ccbench has no RTT variance

    # raw throughput and socket-stats samples are the flow_series rows, at T0 + time_s
    flow = result.summary["flows"][0]
    assert md["SERIES_META"]["TCP upload"]["MEAN_VALUE"] == flow["goodput_mbps"]
    raw = doc["raw_values"]["TCP upload"]
    tput = [s for s in raw if "val" in s]
    stats = [s for s in raw if "tcp_cwnd" in s]
    rows = result.tables["flow_series"].filter(flow=0).sort("time_s")
    assert [s["val"] for s in tput] == rows["goodput_mbps"][1:].to_list()  # the first row is the zero-length start
    assert [s["t"] - flent.T0_EPOCH for s in stats] == pytest.approx(rows["time_s"].to_list(), abs=1e-6)
    assert all(s["dur"] == pytest.approx(0.1) for s in tput)
    # srtt is seeded by the (unsimulated) handshake: the idle path's RTT.
    assert stats[0]["tcp_rtt"] == pytest.approx(20.0, abs=0.5)
    assert all("tcp_rtt" in s for s in stats[-5:])

    # results interpolate the raw samples onto x_values (here a sample falls on every step)
    x = doc["x_values"]
    at = {round(t, 6): v for t, v in zip(rows["time_s"].to_list(), rows["goodput_mbps"].to_list())}
    for i in range(1, len(x)):
        assert doc["results"]["TCP upload"][i] == pytest.approx(at[round(x[i], 6)])

    out = check_with_flent(flent_venv, written.path, "totals", "totals_with_tcp_rtt")
    assert "WARN" not in out, out  # the TCP RTT line (raw tcp_rtt) is drawn too


def test_three_flows_are_tcp_nup_and_flent_draws_them(run_dir, flent_venv, tmp_path) -> None:
    run = run_dir(THREE_UP)
    written = flent.export(run, tmp_path / "three.flent.gz")
    doc, result = read(written.path), ccbench.load(run)
    per_flow = [f"TCP upload::{i}" for i in (1, 2, 3)]
    assert_flent_structure(doc, result, "tcp_nup", [*per_flow, "Ping (ms) ICMP"])
    md = doc["metadata"]
    assert md["TEST_PARAMETERS"]["upload_streams"] == 3
    assert md["TEST_PARAMETERS"]["cc_algos"] == "cubic,cubic,cubic"
    assert [md["CCBENCH"]["series"][s]["id"] for s in per_flow] == ["bulk.1", "bulk.2", "bulk.3"]

    res = doc["results"]
    for agg in ("TCP upload avg", "TCP upload sum", "TCP upload fairness"):
        assert doc["raw_values"][agg] == []
    for i in range(len(doc["x_values"])):
        vals = [res[s][i] for s in per_flow if res[s][i] is not None]
        if vals:
            assert res["TCP upload sum"][i] == pytest.approx(sum(vals))
            assert res["TCP upload avg"][i] == pytest.approx(sum(vals) / len(vals))
    goodputs = [f["goodput_mbps"] for f in result.summary["flows"]]
    assert md["SERIES_META"]["TCP upload sum"]["MEAN_VALUE"] == pytest.approx(sum(goodputs))

    check_with_flent(flent_venv, written.path, "totals", "upload")


def test_ping_only_run_is_ping_and_flent_draws_it(run_dir, flent_venv, tmp_path) -> None:
    run = run_dir(PING_ONLY)
    written = flent.export(run, tmp_path / "ping.flent.gz")
    doc, result = read(written.path), ccbench.load(run)
    assert_flent_structure(doc, result, "ping", ["Ping (ms) ICMP", "Ping (ms) UDP"])
    # one prober: the UDP series repeats its data, and says so
    assert doc["raw_values"]["Ping (ms) UDP"] == doc["raw_values"]["Ping (ms) ICMP"]
    assert doc["metadata"]["CCBENCH"]["series"]["Ping (ms) UDP"] == {"id": "ping", "kind": "ping", "copy": True}
    assert any("Ping (ms) UDP" in n for n in written.notes)

    raw = doc["raw_values"]["Ping (ms) ICMP"]
    probes = result.tables["probes"].sort("time_s")
    assert [s["val"] for s in raw] == probes["rtt_ms"].to_list()
    assert [s["seq"] for s in raw] == list(range(1, len(raw) + 1))  # sent every 100 ms from 0.5 s, none lost
    # null before the first reply (the probe starts at 0.5 s) and after the last, values in between
    icmp = doc["results"]["Ping (ms) ICMP"]
    first = raw[0]["t"] - flent.T0_EPOCH
    assert all(v is None for x, v in zip(doc["x_values"], icmp) if x < first - 0.1 - 1e-9)
    assert all(v is not None for x, v in zip(doc["x_values"], icmp) if first <= x <= 2.9)

    check_with_flent(flent_venv, written.path, "ping", "ping_cdf")


def test_rrul_maps_flows_and_probes_by_dscp_and_direction_by_path(run_dir, flent_venv, tmp_path) -> None:
    run = run_dir(RRUL)
    written = flent.export(run, tmp_path / "rrul.flent.gz", test="rrul")
    doc = read(written.path)
    src = {k: v["id"] for k, v in doc["metadata"]["CCBENCH"]["series"].items()}
    for direction, prefix in (("upload", "up"), ("download", "down")):
        for label, cls in (("BE", "be"), ("BK", "bk"), ("CS5", "cs5"), ("EF", "ef")):
            assert src[f"TCP {direction} {label}"] == f"{prefix}_{cls}"
    assert (src["Ping (ms) ICMP"], src["Ping (ms) UDP EF"]) == ("icmp", "voice")
    assert src["Ping (ms) UDP BK"] == src["Ping (ms) UDP BE"] == "icmp"  # copies, noted
    res = doc["results"]
    tcp_series = [k for k in src if k.startswith("TCP ") and k.split()[-1] in ("BE", "BK", "CS5", "EF")]
    i = len(doc["x_values"]) // 2
    assert res["TCP totals"][i] == pytest.approx(sum(res[k][i] for k in tcp_series))
    pings = ["Ping (ms) ICMP", "Ping (ms) UDP EF", "Ping (ms) UDP BK", "Ping (ms) UDP BE"]
    assert res["Ping (ms) avg"][i] == pytest.approx(sum(res[k][i] for k in pings) / 4)
    # ping_cdf would drop the first and last DELAY (5) s: too much of a 3 s run
    check_with_flent(flent_venv, written.path, "all_scaled", "totals")


def test_test_name_follows_the_run_or_is_refused(run_dir, tmp_path) -> None:
    one, three, rrul = run_dir(ONE_UP), run_dir(THREE_UP), run_dir(RRUL)
    down = flent.export(three, tmp_path / "down.flent.gz", test="tcp_ndown")
    doc = read(down.path)
    assert doc["metadata"]["TEST_PARAMETERS"]["download_streams"] == 3
    assert {"TCP download::1", "TCP download::3", "TCP download sum"} <= set(doc["results"])
    assert not any(k.startswith("TCP upload") for k in doc["results"])
    assert flent.export(one, tmp_path / "p.flent.gz", test="ping").test == "ping"
    assert flent.export(one, tmp_path / "n.flent.gz", test="tcp_nup").test == "tcp_nup"
    with pytest.raises(flent.FlentExportError, match="different forward paths.*--test"):
        flent.export(rrul, tmp_path / "x.flent.gz")
    with pytest.raises(flent.FlentExportError, match="exactly 2 TCP flows; this run has 3"):
        flent.export(three, tmp_path / "x.flent.gz", test="tcp_2up")
    with pytest.raises(flent.FlentExportError, match="exactly 8 TCP flows"):
        flent.export(three, tmp_path / "x.flent.gz", test="rrul")
    with pytest.raises(flent.FlentExportError, match="unsupported flent test 'prague_bbr'"):
        flent.export(three, tmp_path / "x.flent.gz", test="prague_bbr")
    with pytest.raises(flent.FlentExportError, match="must end in .flent.gz"):
        flent.export(three, tmp_path / "x.json")


def test_nan_becomes_null() -> None:
    nan, inf = float("nan"), float("inf")
    assert flent.null_nan({"a": [1.0, nan, inf, -inf, None, 2], "b": {"c": nan}, "d": "NaN"}) == {
        "a": [1.0, None, None, None, None, 2], "b": {"c": None}, "d": "NaN"}
    data = flent.dumps({"results": {"s": [nan, 1.5]}, "metadata": {"MEAN_VALUE": nan}})
    assert json.loads(gzip.decompress(data)) == {"results": {"s": [None, 1.5]}, "metadata": {"MEAN_VALUE": None}}


def test_interpolation_leaves_gaps_like_flents_aggregator() -> None:
    step = 0.2
    x = np.round(np.arange(21) * step, 9)  # 0 … 4 s
    ts = np.array([0.5, 0.9, 3.1])
    vs = np.array([10.0, 20.0, 30.0])
    got = flent.interpolate(x, ts, vs, step)
    by_x = dict(zip(np.round(x, 6).tolist(), got.tolist()))
    assert math.isnan(by_x[0.2]) and by_x[0.4] == 10.0  # before the first sample: half a step at most
    assert by_x[0.6] == pytest.approx(12.5) and by_x[0.8] == pytest.approx(17.5)
    assert by_x[1.8] == pytest.approx(20.0 + 10.0 * 0.9 / 2.2)  # 0.9 s from a sample: within 5 steps
    assert math.isnan(by_x[2.0])  # 1.1 s from both neighbours
    assert by_x[3.2] == 30.0 and math.isnan(by_x[3.4])  # after the last sample: half a step at most


def test_same_run_gives_identical_bytes(run_dir, tmp_path) -> None:
    run = run_dir(THREE_UP)
    a = flent.export(run, tmp_path / "a" / "run.flent.gz").path.read_bytes()
    b = flent.export(run, tmp_path / "b" / "run.flent.gz").path.read_bytes()
    assert a == b
    assert a[4:8] == b"\0\0\0\0"  # gzip mtime


def test_cli_export_flent(run_cli, run_dir) -> None:
    run = run_dir(PING_ONLY)
    result = run_cli("export", "flent", run, "-o", "out/", "--step", "0.1")
    assert result.exit_code == 0, result.stderr
    path = Path("out") / f"{run.name}.flent.gz"
    assert f"wrote {path} (flent test ping)" in result.stdout
    assert "note:" in result.stderr  # the UDP series is a copy
    assert read(path)["metadata"]["STEP_SIZE"] == 0.1

    refused = run_cli("export", "flent", run, "--test", "tcp_1up")
    assert refused.exit_code == 2
    assert "needs exactly 1 TCP flow" in refused.stderr and "Traceback" not in refused.stderr


def test_the_flent_check_fails_a_broken_file(run_dir, flent_venv, tmp_path) -> None:
    """The checker is not a rubber stamp: a short results series and an unknown test name are refused."""
    written = flent.export(run_dir(ONE_UP), tmp_path / "good.flent.gz")
    doc = read(written.path)
    doc["results"]["TCP upload"] = doc["results"]["TCP upload"][:-3]
    doc["metadata"]["NAME"] = "no_such_test"
    bad = tmp_path / "bad.flent.gz"
    with gzip.open(bad, "wt", encoding="utf-8") as f:
        json.dump(doc, f)
    done = subprocess.run([str(flent_venv / "bin" / "python"), str(CHECKER), str(bad), "totals"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "results['TCP upload'] has" in done.stdout and "names no flent test" in done.stdout
    assert "OK: " not in done.stdout
