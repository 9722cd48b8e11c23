"""Run EricssonResearch/scream's own BW test tool through ccbench's emulated path.

    sudo .venv/bin/python bench/scream_real.py --scream DIR [--cases NAME,...] [-o tests/data/scream_real.json]

DIR holds one directory per SCReAM commit, each with the built
``scream_bw_test_tx`` and ``scream_bw_test_rx`` (docs/scream-real.md says how
to fetch and build them; nothing here fetches). Each case is a scenario of the
test record's path (100 Mbit/s DualPI2 with min_qlen_step 2, the RTT on the
feedback path) with a ``[commands]`` section that starts the real receiver and
sender; ``ccbench emulate`` carries their UDP packets through ccbench's own
link code between network namespaces. The rate of the SCReAM flow over
10..30 s (its packets leaving the bottleneck, at 1400 IP bytes each), the
bottleneck's CE marks per packet, how the sender's congestion window rides
and is cut (``trace``, read from the tool's own ``-log``), its microbursts
at the bottleneck's input (``bursts``) and the emulator's timer lateness are
written to the JSON file, each the mean of ``--repeat`` runs (each run's
figures are kept too), with the commit and the command of each case; the
model is tested against the means (tests/test_scream_real.py). ``--table``
prints the recorded cases against a fresh model run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

import ccbench

ROOT = Path(__file__).resolve().parent.parent
EMU = ROOT / "target" / "release" / "ccbench-emu"
WINDOW = (10.0, 30.0)
#: IP bytes of a SCReAM packet with -mtu 1360 ("1400 byte in IP level", test-record.md) and of a full
#: TCP segment: the rates are packets leaving the bottleneck in the window, at these sizes.
MEDIA_BYTES, TCP_BYTES = 1400, 1500


def at_bottleneck(sojourn: pl.DataFrame, flow: int) -> pl.DataFrame:
    """``flow``'s packets dequeued at the bottleneck (link 0) in WINDOW (sojourn table rows)."""
    lo, hi = WINDOW
    return sojourn.filter((pl.col("link") == 0) & (pl.col("flow") == flow) & (pl.col("time_s") >= lo)
                          & (pl.col("time_s") < hi))


def leaving_rate(sojourn: pl.DataFrame, flow: int, size: int) -> float:
    """Mbit/s of ``flow``'s packets dequeued at the bottleneck in WINDOW, at ``size`` bytes each."""
    lo, hi = WINDOW
    return at_bottleneck(sojourn, flow).height * size * 8 / (hi - lo) / 1e6


def _r4(x: float) -> float:
    """A recorded figure: 4 decimals."""
    return round(float(x), 4)


#: Cuts of the congestion window closer together than this make one congestion episode.
EPISODE_GAP_S = 0.25
#: Packets reaching the bottleneck closer together than this belong to one microburst.
BURST_GAP_S = 50e-6
#: DualPI2's step: a packet that waits longer is marked.
STEP_MS = 1.0


def burst_stats(sojourn: pl.DataFrame, flow: int) -> dict:
    """The flow's microbursts as they reach the bottleneck (link 0) in WINDOW, from its per-packet
    records (arrival = departure − sojourn): burst sizes, the gaps between bursts, how long a
    burst's first packet waits (0 when the link drained the previous burst), and in how many
    100 ms intervals some packet waited past DualPI2's 1 ms step (how spread the marks are)."""
    lo, hi = WINDOW
    d = at_bottleneck(sojourn, flow)
    wait = d["sojourn_ms"].to_numpy()
    arrival = d["time_s"].to_numpy() - wait / 1e3
    order = np.argsort(arrival, kind="stable")
    arrival, wait = arrival[order], wait[order]
    gap = np.diff(arrival)
    first = np.r_[True, gap > BURST_GAP_S]
    sizes = np.diff(np.r_[np.flatnonzero(first), len(arrival)])
    between = gap[gap > BURST_GAP_S] * 1e6
    over = np.unique(np.floor(arrival[wait > STEP_MS] * 10))
    return {
        "burst_mean": _r4(sizes.mean()),
        "burst_p10": _r4(np.percentile(sizes, 10)),
        "gap_p10_us": _r4(np.percentile(between, 10)),
        "gap_p50_us": _r4(np.percentile(between, 50)),
        "gap_p90_us": _r4(np.percentile(between, 90)),
        "first_wait_ms": _r4(np.median(wait[first])),
        "step_intervals": _r4(len(over) / ((hi - lo) * 10)),
    }


def code_log(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Time (s), cwnd (bytes) and target bitrate (bit/s) from the sender's ``-log`` file.

    The tool writes a line per feedback that completes a frame or carries a
    mark: time, queue delay, RTT, cwnd, ... with the target bitrate in the
    18th column (ScreamV2Tx.cpp, ``fprintf(fp_log, ...)``, the same at
    76a298a, 994f9a4 and HEAD)."""
    a = np.genfromtxt(path, delimiter=",", usecols=(0, 3, 17), invalid_raise=False)
    a = a[np.isfinite(a).all(axis=1)]
    return a[:, 0], a[:, 1], a[:, 2]


def trace_stats(t: np.ndarray, cwnd: np.ndarray, target: np.ndarray) -> dict:
    """How the congestion window rides over WINDOW: its level and spread, and
    its reaction to congestion: how often and how deep it is cut (each
    decrease between consecutive samples is one cut; cuts within
    EPISODE_GAP_S of each other make one episode). The code's log has a row
    per feedback, the model's series one per millisecond: both see each cut
    (SCReAM cuts at most once per min(sRTT, 30 ms))."""
    lo, hi = WINDOW
    k = (t >= lo) & (t < hi)
    t, cwnd, target = t[k], cwnd[k].astype(float), target[k].astype(float)
    ratio = cwnd[1:] / cwnd[:-1]
    cut = ratio < 1.0
    depth, when = 1.0 - ratio[cut], t[1:][cut]
    episodes = np.split(depth, np.flatnonzero(np.diff(when) > EPISODE_GAP_S) + 1) if len(when) else []
    episode_depth = [1.0 - np.prod(1.0 - e) for e in episodes]
    span = hi - lo
    return {
        "cwnd_kb": _r4(cwnd.mean() / 1e3),
        "cwnd_p10_kb": _r4(np.percentile(cwnd, 10) / 1e3),
        "cwnd_p90_kb": _r4(np.percentile(cwnd, 90) / 1e3),
        "target_mbps": _r4(target.mean() / 1e6),
        "cuts_per_s": _r4(len(depth) / span),
        "cut_pct_median": _r4(np.median(depth) * 100) if len(depth) else 0.0,
        "cut_pct_per_s": _r4(depth.sum() * 100 / span),
        "episodes_per_s": _r4(len(episodes) / span),
        "episode_pct_mean": _r4(np.mean(episode_depth) * 100) if episodes else 0.0,
    }

BASE = """\
name = "{name}"
duration = "{secs}s"
seed = 1
[[links]]
id = "bottleneck"
rate = "100Mbit"
qdisc = {{ kind = "dualpi2", min_qlen_step = 2 }}
[[links]]
id = "feedback"
rate = "1Gbit"
delay = "{rtt}ms"
[[flows]]
id = "scream"
kind = "media"
ecn = "ect1"
media = {{ mtu = 1360, microburst_interval = "{mb}ms", rand = {rand}, version = "{version}" }}
path = ["bottleneck"]
reverse = ["feedback"]
{tcp}
[commands]
server = ['exec "$SCREAM_BIN/scream_bw_test_rx" {rx_ip} 30112 > /dev/null 2>&1'{tcp_server}]
flows = {{ scream = 'exec "$SCREAM_BIN/scream_bw_test_tx" -ect 1 -mtu 1360 -microburstinterval {mb} -rand {rand} -time {secs} -nosummary{log} $CCB_SERVER_IP 30112 > /dev/null 2>&1'{tcp_client} }}
"""

TCP = """\
[[flows]]
id = "tcp"
cc = "{cc}"{params}
start = "5s"
path = ["bottleneck"]
reverse = ["feedback"]
"""

#: The kernel's algorithm for a scenario's ``cc`` where the names differ: Prague is the BPF port of the
#: model's v0.6 (bench/kernel_prague, ``make kernel-prague``), as the test-record suites run it.
KERNEL_CC = {"prague": "bpf_prague"}
#: The model's parameters for those flows: the version the port follows.
MODEL_PARAMS = {"prague": '\ncc_params = { version = "v0.6" }'}
#: What a Prague host does besides its algorithm: ECT(1) on its TCP packets (this kernel sends ECT(0)
#: once AccECN is negotiated) and GSO packets of at most 2 segments (tcp_prague's 2^-12 s at 100 Mbit/s).
PRAGUE_HOST = ('for d in $(ls /sys/class/net | grep -v "^lo$"); do ip link set dev $d gso_max_segs 2 && '
               'tc qdisc add dev $d clsact && tc filter add dev $d egress bpf da obj "$KPRAGUE/ect1.bpf.o" sec tc '
               '|| exit 1; done; ')
KPRAGUE = ROOT / "target" / "kernel-prague"


#: The sender's own log (cwnd and target per feedback), where a case reads the window's ride.
LOG = ' -log "$SCREAM_LOG"'


def scenario(name: str, rtt: float, mb: float = 0.5, rand: int = 0, version: str = "76a298a",
             cc: str | None = None) -> str:
    kcc = KERNEL_CC.get(cc or "", cc)
    # the listener runs the flow's algorithm too: Linux answers AccECN only for one that asks for it
    sink_cc = f" {kcc}" if cc in KERNEL_CC else ""
    host = PRAGUE_HOST if cc == "prague" else ""
    return BASE.format(
        name=name, secs=30, log=LOG, rtt=rtt, mb=mb, rand=rand, version=version,
        rx_ip="10.201.0.1",
        tcp=TCP.format(cc=cc, params=MODEL_PARAMS.get(cc, "")) if cc else "",
        tcp_server=f", 'exec \"$CCB_EMU\" tcp-sink 5201{sink_cc} > /dev/null'" if cc else "",
        tcp_client=f", tcp = '{host}sleep 5; exec \"$CCB_EMU\" tcp-bulk $CCB_SERVER_IP:5201 {kcc} 25 > /dev/null'"
        if cc else "")


CASES = {
    "alone-5ms": dict(rtt=5),
    "alone-25ms": dict(rtt=25),
    "alone-100ms": dict(rtt=100),
    "alone-25ms-rand50": dict(rtt=25, rand=50),
    "alone-25ms-994f9a4": dict(rtt=25, version="994f9a4"),
    "alone-25ms-mb2": dict(rtt=25, mb=2.0),
    "alone-25ms-mb2-994f9a4": dict(rtt=25, mb=2.0, version="994f9a4"),
    "cubic-25ms": dict(rtt=25, cc="cubic"),
    "alone-10ms": dict(rtt=10),
    "alone-50ms": dict(rtt=50),
    "alone-25ms-mb1": dict(rtt=25, mb=1.0),
    "alone-25ms-head": dict(rtt=25, version="head"),
    "bbr-25ms": dict(rtt=25, cc="bbr"),
    "prague-10ms": dict(rtt=10, cc="prague"),
    "prague-25ms": dict(rtt=25, cc="prague"),
    "prague-50ms": dict(rtt=50, cc="prague"),
}


#: The SCReAM flow's 5-tuple in the emulator's summary (the receiver's address and port of BASE).
MEDIA_TUPLE = "udp 10.201.0.1:30112 > 10.201.0.2:30112"


def emulate(name: str, text: str, scream_bin: Path, log: Path | None = None) -> tuple[dict, pl.DataFrame]:
    """Run scenario ``text`` with its [commands] through ``ccbench emulate`` (the tool from ``scream_bin``,
    the sender's log to ``log``): the emulator's summary and the per-packet sojourn table."""
    with tempfile.TemporaryDirectory(prefix="scream-real-") as tmp:
        path = Path(tmp) / f"{name}.toml"
        path.write_text(text)
        out = Path(tmp) / "out"
        env = {**os.environ, "SCREAM_BIN": str(scream_bin), "CCB_EMU": str(EMU), "KPRAGUE": str(KPRAGUE),
               "SCREAM_LOG": str(log or "")}
        cmd = [sys.executable, "-m", "ccbench", "emulate", str(path), "-o", str(out)]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        return json.loads((out / "summary.json").read_text()), pl.read_parquet(out / "sojourn.parquet")


def command(name: str, version: str, kernel_prague: bool) -> str:
    """How a case was run, as recorded with it."""
    return (("make kernel-prague && " if kernel_prague else "")
            + f"SCREAM_BIN=DIR/{version} CCB_EMU={EMU.relative_to(ROOT)} "
            + (f"KPRAGUE={KPRAGUE.relative_to(ROOT)} " if kernel_prague else "")
            + f"ccbench emulate {name}.toml")


def kernel_ready(kcc: str) -> bool:
    """Whether the kernel runs ``kcc`` and, for the Prague port, its ECT(1) marker is built."""
    algorithms = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    return kcc in algorithms and (kcc not in KERNEL_CC.values() or (KPRAGUE / "ect1.bpf.o").is_file())


def measure(name: str, spec: dict, scream_dir: Path) -> dict:
    text = scenario(name, **spec)
    version = spec.get("version", "76a298a")
    with tempfile.TemporaryDirectory(prefix="scream-log-") as tmp:
        log = Path(tmp) / "tx.log"
        summary, sojourn = emulate(name, text, scream_dir / version, log)
        trace = trace_stats(*code_log(log))
    index = {f["tuple"]: i for i, f in enumerate(summary["flows"])}
    media = index[MEDIA_TUPLE]
    tcp = [i for t, i in index.items() if t.startswith("tcp ") and t.endswith(":5201")]
    rate, tcp_rate = leaving_rate(sojourn, media, MEDIA_BYTES), leaving_rate(sojourn, tcp[0], TCP_BYTES) if tcp else None
    link = summary["emulator"]["fwd"]["links"][0]
    fwd = summary["emulator"]["fwd"]
    # "head" is whatever was built: its directory may name the commit in a file COMMIT.
    pinned = scream_dir / version / "COMMIT"
    commit = f"{version} ({pinned.read_text().strip()})" if pinned.is_file() else version
    return {
        "name": name, "commit": commit, "scenario": text,
        "command": command(name, version, spec.get("cc") in KERNEL_CC),
        "window_s": list(WINDOW), "scream_mbps": round(rate, 3),
        "tcp_mbps": None if tcp_rate is None else round(tcp_rate, 3),
        "ce_fraction": round(link["marks"] / max(1, link["tx_pkts"]), 5),
        "trace": trace,
        "bursts": burst_stats(sojourn, media),
        "timer_late_mean_us": round(fwd["timer_late_mean_us"], 1),
        "timer_late_max_us": round(fwd["timer_late_max_us"], 1),
        "date": datetime.date.today().isoformat(),
    }


#: The model's series every millisecond, so that each cut of its window is a sample of its own.
SERIES = '\n[metrics]\ninterval = "1ms"\n'


def model(case: dict) -> dict:
    """The simulator on a recorded case's scenario (it ignores ``[commands]``), measured as the code was."""
    res = ccbench.run(case["scenario"] + SERIES)
    ids = [f["id"] for f in res.summary["flows"]]
    sojourn = res.tables["sojourn"]
    link = next(x for x in res.summary["links"] if x["id"] == "bottleneck")
    media = res.tables["media_series"]
    return {"scream_mbps": leaving_rate(sojourn, ids.index("scream"), MEDIA_BYTES),
            "tcp_mbps": leaving_rate(sojourn, ids.index("tcp"), TCP_BYTES) if "tcp" in ids else None,
            "ce_fraction": link["marks"] / max(1, link["tx_packets"]),
            "trace": trace_stats(media["time_s"].to_numpy(), media["cwnd_bytes"].to_numpy(),
                                 media["target_mbps"].to_numpy() * 1e6),
            "bursts": burst_stats(sojourn, ids.index("scream"))}


#: The trace figures the tables show: (key, heading, format).
TRACE_COLUMNS = (("cwnd_kb", "cwnd kB", "{:.0f}"), ("cuts_per_s", "cuts/s", "{:.1f}"),
                 ("cut_pct_median", "median cut %", "{:.2f}"), ("cut_pct_per_s", "cut %/s", "{:.1f}"),
                 ("episodes_per_s", "episodes/s", "{:.2f}"), ("episode_pct_mean", "episode %", "{:.1f}"))


#: The burst figures the tables show.
BURST_COLUMNS = (("gap_p50_us", "gap µs", "{:.0f}"), ("burst_mean", "packets", "{:.2f}"),
                 ("first_wait_ms", "1st waits ms", "{:.3f}"), ("step_intervals", "intervals marked", "{:.2f}"))


def _code_vs_model(columns: tuple, name: str, code: dict, sim: dict) -> str:
    """A table row: each figure of ``columns`` as code / model."""
    return f"| {name} | " + " | ".join(f"{fmt.format(code[k])} / {fmt.format(sim[k])}" for k, _, fmt in columns) + " |"


def _code_vs_model_head(columns: tuple) -> list[str]:
    return ["| case | " + " | ".join(f"{h} code / model" for _, h, _ in columns) + " |",
            "|---" * (len(columns) + 1) + "|"]


def table(path: Path) -> str:
    """Markdown: each recorded case's code figures against the model's: rate and marking, the window, the bursts."""
    rate = ["| case | commit | code Mbit/s (runs) | model | | code CE | model CE | | timer late, mean / max |",
            "|---|---|---|---|---|---|---|---|---|"]
    trace, bursts = _code_vs_model_head(TRACE_COLUMNS), _code_vs_model_head(BURST_COLUMNS)
    for case in json.loads(path.read_text())["cases"]:
        sim = model(case)
        runs = [r["scream_mbps"] for r in case["runs"]]
        tcp = f" (TCP {case['tcp_mbps']:.1f} / {sim['tcp_mbps']:.1f})" if case["tcp_mbps"] else ""
        rate.append(f"| {case['name']} | {case['commit'].split(' ')[0]} | {case['scream_mbps']:.1f} "
                    f"({min(runs):.1f}–{max(runs):.1f}){tcp} | {sim['scream_mbps']:.1f} | "
                    f"{sim['scream_mbps'] / case['scream_mbps'] - 1:+.0%} | {case['ce_fraction']:.2%} | "
                    f"{sim['ce_fraction']:.2%} | {sim['ce_fraction'] / case['ce_fraction'] - 1:+.0%} | "
                    f"{case['timer_late_mean_us']:.0f} µs / {case['timer_late_max_us'] / 1e3:.1f} ms |")
        trace.append(_code_vs_model(TRACE_COLUMNS, case["name"], case["trace"], sim["trace"]))
        bursts.append(_code_vs_model(BURST_COLUMNS, case["name"], case["bursts"], sim["bursts"]))
    return "\n\n".join("\n".join(t) for t in (rate, trace, bursts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scream", type=Path, help="directory of built SCReAM commits")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("-o", "--out", type=Path, default=ROOT / "tests" / "data" / "scream_real.json")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case (the real code varies run to run)")
    ap.add_argument("--table", action="store_true", help="print the recorded cases against the model's and stop")
    a = ap.parse_args()
    if a.table:
        print(table(a.out))
        return
    if a.scream is None:
        ap.error("--scream DIR is needed to run the code")
    for name in a.cases.split(","):
        kcc = KERNEL_CC.get(CASES[name].get("cc", ""))
        if kcc and not kernel_ready(kcc):
            ap.error(f"{name} runs the kernel's {kcc}: build and register it first (make kernel-prague)")
    old = {c["name"]: c for c in json.loads(a.out.read_text())["cases"]} if a.out.is_file() else {}
    for name in a.cases.split(","):
        runs = [measure(name, CASES[name], a.scream) for _ in range(a.repeat)]
        keys = ("scream_mbps", "tcp_mbps", "ce_fraction", "timer_late_mean_us", "timer_late_max_us")
        mean = {k: None if runs[0][k] is None else round(sum(r[k] for r in runs) / len(runs), 5) for k in keys}
        nested = {g: {k: _r4(sum(r[g][k] for r in runs) / len(runs)) for k in runs[0][g]}
                  for g in ("trace", "bursts")}
        old[name] = {**runs[0], **mean, **nested,
                     "runs": [{**{k: r[k] for k in keys}, **{g: r[g] for g in nested}} for r in runs]}
        print(json.dumps({k: v for k, v in old[name].items() if k != "scenario"}))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"cases": [old[k] for k in CASES if k in old]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
