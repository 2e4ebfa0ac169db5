"""Benchmark: how long the lookup path takes (import, one count, the whole registry), and that it stays torch-free.

Run: python benchmarks/lookup.py
Prints wall-clock figures; nothing is asserted (machines are noisy).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def wall(cmd: list[str], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    python = sys.executable
    print(f"python -c 'import archzoo.cli'          {wall([python, '-c', 'import archzoo.cli']):.3f} s (median of 5)")
    print(
        f"archzoo count bert --json               {wall([python, '-m', 'archzoo.cli', 'count', 'bert', '--json']):.3f} s"
    )
    print(f"archzoo list --json (whole registry)    {wall([python, '-m', 'archzoo.cli', 'list', '--json']):.3f} s")
    print(
        f"archzoo show gpt3-175b --json           {wall([python, '-m', 'archzoo.cli', 'show', 'gpt3-175b', '--json']):.3f} s"
    )
    check = subprocess.run(
        [
            python,
            "-c",
            "import sys, archzoo.cli as c; c.main(['list', '--json']) ; "
            "print(sorted(m for m in ('torch', 'transformers', 'sympy', 'mkdocs') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    print(f"heavy modules imported by `archzoo list`: {check.stdout.strip().splitlines()[-1]}")

    import archzoo
    from archzoo.registry import load_registry

    start = time.perf_counter()
    registry = load_registry()
    for entry in registry:
        entry.report.to_dict()
    elapsed = time.perf_counter() - start
    print(
        f"in process: load + report {len(registry)} entries  {elapsed * 1000:.1f} ms "
        f"({elapsed * 1000 / max(len(registry), 1):.2f} ms per entry)"
    )
    start = time.perf_counter()
    for _ in range(200):
        archzoo.count("gpt", n_layers=96, d_model=12288, n_heads=96).to_dict()
    print(f"in process: count + to_dict, GPT-3 175B   {(time.perf_counter() - start) / 200 * 1000:.2f} ms each")


if __name__ == "__main__":
    main()
