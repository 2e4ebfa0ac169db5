"""How `archzoo list` and `archzoo show` scale with the size of the registry.

A registry of N entries is generated from the shipped one (each shipped entry copied under numbered ids,
with its layer count varied so no two entries are the same), then each command runs as a fresh process:
wall time and peak resident memory (``os.wait4``), for the shipped entries and for N. `list --json`
runs once cold (no index cache), once more to let the cache settle (files written in the two seconds
before it was made are checked by content once more), then warm; `show` reads one entry.

Warm runs are repeated (``--repeat``, default 7), alternating the two registries so that a busy machine
slows both alike, and each figure is the median of its runs. Targets (issue: a registry that scales): a
warm `list --json` over N = 20,000 entries within 3x the time over the shipped entries and under 300 MB; `show`
flat, within 1.5x. The exit status is 1 when a target is missed.

    python benchmarks/registry_scale.py            # N = 20,000
    python benchmarks/registry_scale.py --n 5000 --repeat 9
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "registry"

#: (command, largest ratio of its time at N entries to its time at the shipped registry, largest peak memory in MiB)
TARGETS = {"list --json (warm)": (3.0, 300.0), "show (warm)": (1.5, 300.0)}


def generate(folder: Path, n: int) -> list[str]:
    """``n`` entries in ``folder``: the shipped ones first, then numbered variants; returns their ids."""
    sources = sorted(SHIPPED.rglob("*.yaml"))
    ids = []
    for i in range(n):
        source = sources[i % len(sources)]
        text = source.read_text(encoding="utf-8")
        if i < len(sources):
            model_id = source.stem
        else:
            model_id = f"{source.stem}-v{i:05d}"
            # drop the published figure (a variant is not the published model) and vary the depth
            text = re.sub(r"\npublished:\n(?:  .*\n|    .*\n)*", "\n", text)
            text = re.sub(r"\nreconciliation:\n(?:  .*\n)*", "\n", text)
            text = re.sub(r"\nreference:\n(?:  .*\n)*", "\n", text)
        (folder / f"{model_id}.yaml").write_text(text, encoding="utf-8")
        ids.append(model_id)
    return ids


def measure(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds and peak MiB of one archzoo process; a failing command stops the benchmark."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "archzoo.cli", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    error = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise SystemExit(f"archzoo {' '.join(args)} exited {code}:\n{error}")
    return elapsed, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="entries in the large registry")
    parser.add_argument("--repeat", type=int, default=7, help="runs of each warm command (median reported)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="archzoo-scale-"))
    try:
        sizes: dict[str, tuple[Path, list[str], dict[str, str]]] = {}
        for n in (len(list(SHIPPED.rglob("*.yaml"))), args.n):
            folder = work / str(n)
            folder.mkdir()
            label = f"{n:,}"
            sizes[label] = (folder, generate(folder, n), dict(os.environ, ARCHZOO_CACHE_DIR=str(work / f"cache-{n}")))
        small, big = sizes

        def command(what: str, label: str) -> list[str]:
            folder, ids, _ = sizes[label]
            if what.startswith("show"):
                return ["show", ids[len(ids) // 2], "--registry", str(folder)]
            return ["list", "--json", "--registry", str(folder)]

        runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for label, (_, _, env) in sizes.items():
            seconds, mib = measure(command("list --json (cold)", label), env)
            runs[(label, "list --json (cold)")] = [(seconds, mib)]
            measure(command("list --json (warm)", label), env)  # the cache settles
        for _ in range(args.repeat):
            for what in TARGETS:
                for label, (_, _, env) in sizes.items():
                    runs.setdefault((label, what), []).append(measure(command(what, label), env))
        for label in sizes:
            for what in ("list --json (cold)", *TARGETS):
                times = [seconds for seconds, _ in runs[(label, what)]]
                spread = f"  (runs {min(times):.2f} to {max(times):.2f} s)" if len(times) > 1 else ""
                print(
                    f"{label:>7} entries  {what:<20} {statistics.median(times):7.2f} s  "
                    f"{max(mib for _, mib in runs[(label, what)]):6.0f} MiB{spread}"
                )
        print()
        missed = 0
        for what, (most_ratio, most_mib) in TARGETS.items():
            ratio = statistics.median(s for s, _ in runs[(big, what)]) / statistics.median(
                s for s, _ in runs[(small, what)]
            )
            peak = max(mib for _, mib in runs[(big, what)])
            met = ratio <= most_ratio and peak < most_mib
            missed += not met
            print(
                f"{what}: {big} entries take {ratio:.2f}x the time of {small} entries (target {most_ratio:g}x), "
                f"peak {peak:.0f} MiB (target under {most_mib:.0f}): {'met' if met else 'MISSED'}"
            )
        return 1 if missed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
