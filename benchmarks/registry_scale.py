"""How `archzoo list` and `archzoo show` scale with the size of the registry.

A registry of N entries is generated from the shipped one (each shipped entry copied under numbered ids,
with its layer count varied so no two entries are the same), then each command runs as a fresh process:
wall time and peak resident memory (``os.wait4``), for the shipped 46 entries and for N. `list` runs
twice, cold (no index cache) and warm; `show` once. Targets (issue: a registry that scales): a warm
`list --json` over 20,000 entries within 3x the time over 46 entries and under 300 MB; `show` flat.

    python benchmarks/registry_scale.py            # N = 20,000
    python benchmarks/registry_scale.py --n 5000
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "registry"


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


def measure(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Seconds, peak MiB and exit code of one archzoo process."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "archzoo.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.stderr.close()
    return elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="entries in the large registry")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="archzoo-scale-"))
    try:
        small, large = work / "small", work / "large"
        small.mkdir()
        large.mkdir()
        small_ids = generate(small, len(list(SHIPPED.rglob("*.yaml"))))
        large_ids = generate(large, args.n)
        results: dict[tuple[str, str], tuple[float, float]] = {}
        for label, folder, ids in (("46", small, small_ids), (f"{args.n:,}", large, large_ids)):
            env = dict(os.environ, ARCHZOO_CACHE_DIR=str(work / f"cache-{label}"))
            for what, cli in (("list --json (cold)", ["list", "--json", "--registry", str(folder)]),
                              ("list --json (warm)", ["list", "--json", "--registry", str(folder)]),
                              ("show (warm)", ["show", ids[len(ids) // 2], "--registry", str(folder)])):
                seconds, mib, code = measure(cli, env)
                if code:
                    print(f"archzoo {' '.join(cli)} exited {code}", file=sys.stderr)
                    return 1
                results[(label, what)] = (seconds, mib)
                print(f"{label:>7} entries  {what:<20} {seconds:7.2f} s  {mib:6.0f} MiB", flush=True)
        big = f"{args.n:,}"
        print()
        for what in ("list --json (warm)", "show (warm)"):
            ratio = results[(big, what)][0] / results[("46", what)][0]
            print(f"{what}: {big} entries take {ratio:.2f}x the time of 46 entries, peak "
                  f"{results[(big, what)][1]:.0f} MiB")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
