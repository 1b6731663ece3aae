"""`toolgram check` at scale: records per second and peak memory at 10k, 100k and 1M records.

    python benchmarks/bench_check.py                    # 10k, 100k, 1M; --jobs 1 and 2
    python benchmarks/bench_check.py --sizes 10000 --jobs 1 2 4
    python benchmarks/bench_check.py --baseline         # also --save-baseline, then --baseline

The log is JSON lines of the project's corpus replies (tests/corpus/*/*.txt, every
format, repaired and broken ones included) cycled to the size asked, each record with
its own id. Each run is `python -m toolgram check LOG --jobs N` in a fresh process; the
peak memory is the largest resident set of that process and its workers (getrusage of
the children), and CPU seconds are those of all its processes. `--split` adds, for each
--jobs N > 1, N independent check processes on N slices of the log run at once: the
speed-up the machine itself gives N processes that share nothing, the ceiling of --jobs N
(on a machine other work keeps busy, that ceiling is low, and --jobs cannot beat it). The 1M run takes minutes per --jobs value: it is a
benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"


def replies() -> list[str]:
    return [p.read_bytes().decode("utf-8") for p in sorted(CORPUS.glob("*/*.txt"))]


def write_log(path: Path, n: int) -> None:
    pool = replies()
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"r{i}", "raw": pool[i % len(pool)]}, ensure_ascii=False) + "\n")


_WRAPPER = """
import resource, subprocess, sys, time
t = time.perf_counter()
proc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
elapsed = time.perf_counter() - t
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(proc.returncode, elapsed, usage.ru_maxrss, usage.ru_utime + usage.ru_stime)  # (ru_maxrss: KiB on Linux)
sys.stderr.write(proc.stderr.decode(errors="replace")[-2000:])
"""


def measure(args: list[str]) -> tuple[int, float, float, float]:
    """(exit status, seconds, peak MiB, CPU seconds of all its processes) of one `python -m toolgram check …`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-c", _WRAPPER, sys.executable, "-m", "toolgram", "check", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    code, seconds, peak, cpu = out.stdout.split()
    if int(code) not in (0, 1):
        sys.stderr.write(out.stderr)
    scale = 1024 if sys.platform != "darwin" else 1024 * 1024  # (ru_maxrss: KiB on Linux, bytes on macOS)
    return int(code), float(seconds), int(peak) / scale, float(cpu)


def measure_split(log: Path, parts: int, folder: Path) -> tuple[float, float]:
    """(seconds, CPU seconds) of `parts` independent `toolgram check` processes, each on its
    own slice of the log, run at once: what the machine gives `parts` processes with nothing
    shared, the ceiling of --jobs `parts`."""
    slices = [folder / f"{log.stem}.part{i}.jsonl" for i in range(parts)]
    files = [open(p, "w", encoding="utf-8") for p in slices]  # noqa: SIM115 - closed below
    with open(log, encoding="utf-8") as f:
        for i, line in enumerate(f):
            files[i % parts].write(line)
    for file in files:
        file.close()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-m", "toolgram", "check", str(p)], stdout=subprocess.DEVNULL, env=env) for p in slices
    ]
    for proc in procs:
        proc.wait()
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    for p in slices:
        p.unlink()
    return seconds, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--baseline", action="store_true", help="also time --save-baseline and --baseline runs")
    ap.add_argument(
        "--split", action="store_true",
        help="for each --jobs N > 1, also run N independent check processes on N slices of the log at once: "
        "the speed-up the machine gives N processes sharing nothing, --jobs N's ceiling",
    )  # fmt: skip
    ap.add_argument("--keep", metavar="DIR", help="write the logs here (and keep them) instead of a temporary folder")
    opts = ap.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; corpus of {len(replies())} replies")
    print(f"{'records':>9}  {'jobs':>4}  {'run':<14}  {'seconds':>8}  {'records/s':>10}  {'peak MiB':>8}  {'CPU s':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(opts.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for n in opts.sizes:
            log = folder / f"log_{n}.jsonl"
            if not log.exists():
                write_log(log, n)
            base = folder / f"base_{n}.parquet"
            first = None
            for jobs in opts.jobs:
                runs = [("check", [str(log), "--jobs", str(jobs)])]
                if opts.baseline:
                    runs += [
                        ("save-baseline", [str(log), "--jobs", str(jobs), "--save-baseline", str(base)]),
                        ("baseline", [str(log), "--jobs", str(jobs), "--baseline", str(base)]),
                    ]
                for name, args in runs:
                    _, seconds, peak, cpu = measure(args)
                    if name == "check":
                        first = first or seconds
                    speed = f"  (x{first / seconds:.2f})" if name == "check" and jobs != opts.jobs[0] else ""
                    print(f"{n:>9}  {jobs:>4}  {name:<14}  {seconds:>8.1f}  {n / seconds:>10,.0f}  {peak:>8.0f}  {cpu:>7.1f}{speed}", flush=True)
                if jobs > 1 and opts.split:
                    seconds, cpu = measure_split(log, jobs, folder)
                    print(f"{n:>9}  {jobs:>4}  {'split (ceiling)':<14}  {seconds:>8.1f}  {n / seconds:>10,.0f}  {'':>8}  {cpu:>7.1f}  (x{first / seconds:.2f})", flush=True)
    print(f"(the benchmark's own peak: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")


if __name__ == "__main__":
    main()
