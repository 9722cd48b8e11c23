"""How ccbench's wall time scales with link rate, flow count and run length.

Runs bench/b3-50cubic-1g.toml (CUBIC flows through a 20 ms FQ-CoDel
bottleneck) with one parameter varied at a time, through the Python API
with the tables written to disk as the run goes (what `ccbench run` does),
and prints, per run, the engine's wall time (summary engine.wall_s), the
whole call's, the bottleneck packets per wall second and the peak RSS of
the process so far. Writes bench/scale.json and, with matplotlib,
bench/scale.png (wall time against each parameter, with the line through
the first point that linear scaling would follow).

    .venv/bin/python bench/scale.py            # about 15 s here
    .venv/bin/python bench/scale.py --plot-only
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import ccbench

HERE = Path(__file__).resolve().parent
BASE = HERE / "b3-50cubic-1g.toml"

# (axis, value, overrides): one parameter varied around 1 Gbit/s, 50 flows.
SWEEPS = [
    *[("rate_gbit", g, [f'links.bottleneck.rate="{g}Gbit"', f'links.return.rate="{g}Gbit"', 'duration="4s"',
                        'metrics.warmup="1s"']) for g in (0.1, 1, 10)],
    *[("flows", n, [f"flows.cubic.count={n}", 'duration="4s"', 'metrics.warmup="1s"']) for n in (10, 100, 1000)],
    *[("duration_s", d, [f'duration="{d}s"', 'metrics.warmup="1s"']) for d in (5, 20, 80)],
]


def main() -> None:
    rows = []
    for axis, value, ov in SWEEPS:
        with tempfile.TemporaryDirectory() as spill:
            t0 = time.perf_counter()
            r = ccbench.run(BASE, set=ov, spill_dir=spill)
            wall = time.perf_counter() - t0
            link = next(x for x in r.summary["links"] if x["id"] == "bottleneck")
        row = {"axis": axis, "value": value, "engine_s": r.summary["engine"]["wall_s"], "wall_s": wall,
               "events": r.summary["engine"]["events"], "bottleneck_pkts": link["tx_packets"],
               "sim_s": r.summary["duration_s"], "utilization": link["utilization"],
               "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
        row["pkts_per_wall_s"] = row["bottleneck_pkts"] / row["engine_s"]
        rows.append(row)
        print(f"{axis:>10} {value:>6}: engine {row['engine_s']:7.3f} s, call {wall:7.3f} s, "
              f"{row['events'] / 1e6:7.2f} M events, {row['pkts_per_wall_s'] / 1e6:5.2f} M bottleneck pkts/s, "
              f"util {row['utilization']:.3f}, peak RSS {row['peak_rss_mb']:.0f} MB", flush=True)
    (HERE / "scale.json").write_text(json.dumps(rows, indent=1) + "\n")
    plot(rows)


def plot(rows: list[dict]) -> None:
    try:
        import matplotlib
        import matplotlib.ticker

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit(0)
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    labels = {"rate_gbit": "bottleneck rate, Gbit/s (4 s, 50 flows)", "flows": "flows (1 Gbit/s, 4 s)",
              "duration_s": "simulated s (1 Gbit/s, 50 flows)"}
    for ax, axis in zip(axes, labels):
        pts = [(r["value"], r["engine_s"]) for r in rows if r["axis"] == axis]
        xs, ys = zip(*pts)
        ax.loglog(xs, ys, "o-", label="engine wall s")
        ax.loglog(xs, [ys[0] * x / xs[0] for x in xs], "--", color="grey", label="linear")
        ax.set_xlabel(labels[axis])
        ax.grid(True, which="both", alpha=0.3)
        for a in (ax.xaxis, ax.yaxis):
            a.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[0].set_ylabel("wall s")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(HERE / "scale.png", dpi=90)


if __name__ == "__main__":
    if sys.argv[1:] == ["--plot-only"]:  # redraw scale.png from scale.json
        plot(json.loads((HERE / "scale.json").read_text()))
    else:
        main()
