"""Benchmark: how the site build scales with the size of the registry.

Generates synthetic registry entries (valid configurations of the built-in architectures) in a
temporary folder outside the repository, then times, in one run:

1. the archzoo site with 1,000 entries (sectioned navigation, ``navigation.prune``);
2. the same 1,000 pages with mkdocs-material's default: every page in one flat navigation, not pruned;
3. the archzoo site with 5,000 entries.

Targets: (1) at most a third of (2), and (3) at most 6x (1). The figures are recorded in
src/archzoo/site/docs/performance.md. Run: ``python benchmarks/site_build.py`` (add ``--sizes 200 1000`` to try others).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

from archzoo.site import SiteOptions, build_site

ARCHITECTURES = ("bert", "gpt", "vit", "transformer")


def entry(i: int) -> tuple[str, dict]:
    """The ``i``-th synthetic entry: a valid configuration that varies depth, width and heads."""
    arch = ARCHITECTURES[i % len(ARCHITECTURES)]
    heads = (4, 8, 12, 16)[(i // 4) % 4]
    d_model = heads * 64 * (1 + (i // 16) % 3)
    layers = 2 + (i // 48) % 24
    if arch == "bert":
        config = {"n_layers": layers, "d_model": d_model, "n_heads": heads, "d_ff": 4 * d_model}
    elif arch == "gpt":
        config = {"n_layers": layers, "d_model": d_model, "n_heads": heads, "max_positions": 256 * (1 + i % 8)}
    elif arch == "vit":
        config = {
            "n_layers": layers,
            "d_model": d_model,
            "n_heads": heads,
            "d_ff": 4 * d_model,
            "patch_size": (8, 14, 16, 32)[(i // 8) % 4],
            "image_size": 224,
        }
    else:
        config = {
            "n_encoder_layers": layers,
            "n_decoder_layers": layers,
            "d_model": d_model,
            "n_heads": heads,
            "d_ff": 4 * d_model,
        }
    if arch == "vit" and 224 % config["patch_size"]:
        config["patch_size"] = 16
    model_id = f"bench-{arch}-{i:05d}"
    data = {
        "architecture": arch,
        "title": f"Synthetic {arch} #{i}",
        "summary": f"A generated {arch} configuration ({layers} layers, width {d_model}) for the site benchmark.",
        "tags": ["synthetic", arch, f"layers-{layers}"],
        "year": 2017 + i % 8,
        "config": config,
    }
    return model_id, data


def write_registry(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        model_id, data = entry(i)
        sub = folder / data["architecture"]
        sub.mkdir(exist_ok=True)
        (sub / f"{model_id}.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return folder


def timed_build(registry: Path, out: Path, *, flat: bool = False) -> float:
    lines: list[str] = []
    started = time.perf_counter()
    build_site(out, registry=[registry], progress=lines.append, options=SiteOptions(flat_nav=flat))
    elapsed = time.perf_counter() - started
    for line in lines:
        print(f"    {line}", flush=True)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000, help="entries in the first registry (1000)")
    parser.add_argument("--large", type=int, default=5000, help="entries in the large registry (5000)")
    parser.add_argument("--skip-large", action="store_true", help="time only the small registry and the baseline")
    parser.add_argument("--skip-flat", action="store_true", help="skip the flat-navigation baseline")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    results: dict[str, float | int | bool] = {"small": args.small, "large": args.large}
    with tempfile.TemporaryDirectory(prefix="archzoo-bench-") as tmp:
        root = Path(tmp)
        small = write_registry(root / f"registry-{args.small}", args.small)
        print(f"archzoo site, {args.small:,} entries, sectioned navigation + navigation.prune:", flush=True)
        results["archzoo_small_s"] = timed_build(small, root / "site-small")
        print(f"  {results['archzoo_small_s']:.1f} s", flush=True)
        if not args.skip_flat:
            print(f"baseline, {args.small:,} entries, one flat navigation, no pruning:", flush=True)
            results["flat_small_s"] = timed_build(small, root / "site-flat", flat=True)
            print(f"  {results['flat_small_s']:.1f} s", flush=True)
        if not args.skip_large:
            large = write_registry(root / f"registry-{args.large}", args.large)
            print(f"archzoo site, {args.large:,} entries:", flush=True)
            results["archzoo_large_s"] = timed_build(large, root / "site-large")
            print(f"  {results['archzoo_large_s']:.1f} s", flush=True)

    ok = True
    print()
    if "flat_small_s" in results:
        ratio_flat = results["archzoo_small_s"] / results["flat_small_s"]
        results["small_over_flat"] = round(ratio_flat, 3)
        ok = ratio_flat <= 1 / 3
        print(
            f"{args.small:,} entries: archzoo {results['archzoo_small_s']:.1f} s vs flat navigation "
            f"{results['flat_small_s']:.1f} s = {ratio_flat:.2f}x (target <= 0.33x): {'ok' if ok else 'MISSED'}"
        )
    if "archzoo_large_s" in results:
        ratio_large = results["archzoo_large_s"] / results["archzoo_small_s"]
        results["large_over_small"] = round(ratio_large, 3)
        ok_large = ratio_large <= 6
        ok = ok and ok_large
        print(
            f"{args.large:,} entries: {results['archzoo_large_s']:.1f} s = {ratio_large:.2f}x the "
            f"{args.small:,}-entry build (target <= 6x): {'ok' if ok_large else 'MISSED'}"
        )
    results["ok"] = ok
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
