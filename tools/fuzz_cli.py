"""`make fuzz`'s command-line part: the properties of tests/test_fuzz_cli.py
(Hypothesis over files, suites and result directories) with random seeds,
round after round, for a set time. Prints how many examples ran; exits 1
at the first failing round, whose output shows the example and how to
reproduce it.

    python tools/fuzz_cli.py SECONDS     (CCBENCH_FUZZ_EXAMPLES per test per round, default 200)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    with tempfile.TemporaryDirectory(prefix="ccbench-fuzz-cli-") as tmp:
        tally = Path(tmp) / "tally"
        tally.touch()
        env = {**os.environ, "CCBENCH_FUZZ_RANDOM": "1", "CCBENCH_FUZZ_TALLY": str(tally),
               "CCBENCH_FUZZ_EXAMPLES": os.environ.get("CCBENCH_FUZZ_EXAMPLES", "200")}
        t0 = time.monotonic()
        rounds, failed = 0, False
        while time.monotonic() - t0 < seconds and not failed:
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_fuzz_cli.py"],
                                  cwd=ROOT, env=env)
            rounds += 1
            failed = done.returncode != 0
        examples = len(tally.read_text().splitlines())
    print(f"fuzz-cli: {examples} examples in {rounds} rounds, {time.monotonic() - t0:.0f} s: "
          f"{'a round failed (above)' if failed else 'no failure'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
