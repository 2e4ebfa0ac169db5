"""Time and peak memory of every case of the hostile-input corpus, each run alone in its own process.

Every test marked ``hostile`` (registry files, configs, --set, plugins, site builds crafted to hang,
exhaust, crash or fool archzoo) is run as its own ``pytest`` process; the wall time and the peak
resident memory of that process and its children (``os.wait4``) are recorded. A case that runs past
``--timeout`` seconds is killed and counted as a failure. A baseline (one trivial test in the same kind of
process) shows what pytest and the imports cost by themselves.

    python benchmarks/hostile.py                 # every case; prints a table and the maxima
    python benchmarks/hostile.py -k registry     # only cases whose id matches
    python benchmarks/hostile.py --json out.json
    python benchmarks/hostile.py -k "checkpoint or columns"   # the cases of a few classes; maxima per class
    python benchmarks/hostile.py --whatif        # also: one what-if update of 60,000 and 200,000 typed digits

After the table, the largest time and peak memory of each class of hostile input (`CLASSES`: the classes of
the hardening issues, a case's class read from its test's name; any other case is classed by its test file).
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

#: The classes of hostile input of the second hardening round (issue 19), each with the test names (parts of
#: a pytest node id) whose cases belong to it; the first class that matches a case is its class.
CLASSES = {
    "wrong answers without a word": (
        "test_a_layout_no_quantiser_writes",
        "test_a_possible_layout_is_still_counted",
        "test_an_odd_count_of_4_bit_values",
    ),
    "terminal control from a file": ("test_tensor_names_", "test_printable_", "test_every_line_and_cell_printed"),
    "script from the owner's own text": (
        "test_markup_in_the_title",
        "test_the_about_page_shows",
        "test_a_site_url_that_is_not_http",
    ),
    "freezes and floods": (
        "test_thousands_of_distinct_first_names",
        "test_a_hundred_thousand_packed",
        "test_packed_tensors_refused_for_many",
        "test_a_value_of_thousands_of_digits",
    ),
    "tracebacks": ("test_a_zero_width_gptq", "test_numpy_missing"),
    "silent nothing": ("test_a_columns_that_is_no_width",),
    "names": ("test_a_name_yaml_reads_as_another", "test_every_id_of_the_compare_address"),
    "fuzzing (hypothesis)": (
        "test_any_safetensors_header",
        "test_any_sharded_index",
        "test_whatever_is_typed_the_page_agrees",
    ),
}


def classify(node: str) -> str:
    """The class of hostile input a case belongs to (`CLASSES`), else its test file's name."""
    for name, tests in CLASSES.items():
        if any(test in node for test in tests):
            return name
    return node.split("::", 1)[0]


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


def whatif_update_times(digits: tuple[int, ...] = (60_000, 200_000)) -> list[tuple[int, float, int]]:
    """The time (ms) of one what-if update in Chromium after typing a value of so many digits into GPT's
    d_model, and the length of the status line it writes: the page's own work, without the site's build
    that the browser tests' times include. Builds a one-calculator site in a temporary folder."""
    sys.path.insert(0, str(ROOT / "tests"))
    from archzoo.site import build_site
    from browsing import chromium, served

    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "docs").mkdir()
        (project / "docs" / "whatif.md").write_text(
            '# What if\n\n<div class="archzoo-whatif" data-architecture="gpt" data-model=""></div>\n', encoding="utf-8"
        )
        (project / "mkdocs.yml").write_text(
            "site_name: whatif\ntheme:\n  name: material\nplugins:\n  - search\n  - archzoo\n", encoding="utf-8"
        )
        site = build_site(project / "site", registry=[ROOT / "registry"], config_file=project / "mkdocs.yml")
        results = []
        with served(site) as url, chromium() as browser:
            page = browser.new_page()
            page.goto(url + "whatif/")
            page.wait_for_selector(".archzoo-whatif[data-az-ready='1']")
            for n in digits:
                ms = page.evaluate(
                    """(n) => { const input = document.querySelector("input[data-key='d_model']");
                      input.value = '7'.repeat(n); const start = performance.now();
                      input.dispatchEvent(new Event('input')); return performance.now() - start; }""",
                    n,
                )
                results.append((n, ms, len(page.locator(".az-whatif-status").inner_text())))
        return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="keyword", help="only cases whose pytest id matches (pytest -k)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a case is killed")
    parser.add_argument("--json", dest="json_out", type=Path, help="also write the results as JSON")
    parser.add_argument("--whatif", action="store_true", help="also time one what-if update of a huge typed value")
    args = parser.parse_args()
    if args.whatif:
        for n, ms, status in whatif_update_times():
            print(f"what-if update, {n:,} digits typed: {ms:,.1f} ms, status line of {status:,} characters")
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
    print()
    print("largest time (in the test; as a process) and peak memory of each class:")
    by_class: dict[str, list[dict]] = {}
    for r in results:
        by_class.setdefault(classify(r["case"]), []).append(r)
    for name, cases in sorted(by_class.items()):
        slow = max(cases, key=lambda r: r["test_seconds"] or r["seconds"])
        big = max(cases, key=lambda r: r["peak_mib"])
        own = f"{slow['test_seconds']:.2f} s" if slow["test_seconds"] is not None else "-"
        print(
            f"  {name}: {len(cases)} cases; {own}; {slow['seconds']:.2f} s ({slow['case']}); "
            f"{big['peak_mib']:.0f} MiB ({big['case']})"
        )
    for r in failed:
        print(f"FAILED {r['case']}: {r['tail']}")
    if args.json_out:
        args.json_out.write_text(json.dumps({"baseline": base, "cases": results}, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
