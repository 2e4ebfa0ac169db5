"""Time and peak memory of every case of the hostile-input corpus, each run alone in its own process.

Every test marked ``hostile`` (registry files, configs, --set, plugins, site builds crafted to hang,
exhaust, crash or fool archzoo) is run as its own ``pytest`` process; the wall time and the peak
resident memory of that process and its children (``os.wait4``) are recorded. A case that runs past
``--timeout`` seconds is killed and counted as a failure. A baseline (one trivial test in the same kind of
process) shows what pytest and the imports cost by themselves.

    python benchmarks/hostile.py                 # every case; prints a table and the maxima
    python benchmarks/hostile.py -k registry     # only cases whose id matches
    python benchmarks/hostile.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def collect(keyword: str | None) -> list[str]:
    args = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "hostile", "-p", "no:cacheprovider"]
    if keyword:
        args += ["-k", keyword]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False).stdout
    return [line for line in out.splitlines() if "::" in line]


def run(node: str, timeout: float) -> dict:
    """Run one test node in its own process: the process's time and peak memory (MiB), the test's own
    time (setup, call and teardown, from pytest's JUnit report) and the outcome."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    report = Path(tempfile.mkdtemp()) / "junit.xml"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", f"--junitxml={report}", node],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    deadline = started + timeout
    status = rusage = None
    while True:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pid, status, rusage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.01)
    elapsed = time.perf_counter() - started
    output = proc.stdout.read().decode("utf-8", "replace") if proc.stdout else ""
    code = os.waitstatus_to_exitcode(status)
    test_seconds = None
    if report.is_file():
        import xml.etree.ElementTree as ET

        cases = ET.parse(report).getroot().iter("testcase")
        test_seconds = round(sum(float(c.get("time", 0)) for c in cases), 3)
        report.unlink()
    report.parent.rmdir()
    return {
        "case": node,
        "seconds": round(elapsed, 3),
        "test_seconds": test_seconds,
        "peak_mib": round(rusage.ru_maxrss / 1024, 1),
        "outcome": "passed"
        if code == 0
        else ("killed (timeout)" if code == -signal.SIGKILL else f"failed (exit {code})"),
        "tail": "" if code == 0 else output.strip().splitlines()[-1:],
    }


def baseline(timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        test = Path(folder) / "test_baseline.py"
        test.write_text("import archzoo.cli\n\ndef test_nothing():\n    assert archzoo.cli.main(['--version']) == 0\n")
        return run(str(test), timeout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="keyword", help="only cases whose pytest id matches (pytest -k)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a case is killed")
    parser.add_argument("--json", dest="json_out", type=Path, help="also write the results as JSON")
    args = parser.parse_args()
    nodes = collect(args.keyword)
    if not nodes:
        print("no hostile cases collected", file=sys.stderr)
        return 1
    base = baseline(args.timeout)
    print(f"baseline (pytest + archzoo import, one trivial test): {base['seconds']:.2f} s, {base['peak_mib']:.0f} MiB")
    print(f"running {len(nodes)} hostile cases, each in its own process", file=sys.stderr)
    results = []
    for i, node in enumerate(nodes, 1):
        result = run(node, args.timeout)
        results.append(result)
        own = f"{result['test_seconds']:7.2f} s" if result["test_seconds"] is not None else "      - "
        print(
            f"{i:4d}/{len(nodes)} {own} (process {result['seconds']:6.2f} s) {result['peak_mib']:6.0f} MiB  "
            f"{result['outcome']:<8} {node}",
            flush=True,
        )
    slowest = max(results, key=lambda r: r["test_seconds"] or r["seconds"])
    biggest = max(results, key=lambda r: r["peak_mib"])
    failed = [r for r in results if r["outcome"] != "passed"]
    print()
    print(f"cases: {len(results)}, passed: {len(results) - len(failed)}, failed or killed: {len(failed)}")
    print(
        f"largest time:        {slowest['test_seconds']:.2f} s in the test, {slowest['seconds']:.2f} s as a process  "
        f"({slowest['case']})"
    )
    print(f"largest peak memory: {biggest['peak_mib']:.0f} MiB  ({biggest['case']})")
    print(f"baseline:            {base['seconds']:.2f} s, {base['peak_mib']:.0f} MiB")
    for r in failed:
        print(f"FAILED {r['case']}: {r['tail']}")
    if args.json_out:
        args.json_out.write_text(json.dumps({"baseline": base, "cases": results}, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
