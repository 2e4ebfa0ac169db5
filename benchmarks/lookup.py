"""Benchmark: a lookup (`archzoo count --hf-config`) against two yardsticks that do none of its work.

Targets (issue 20), each a ratio measured in this one run, the commands interleaved so that both sides of a
ratio see the same load on the machine:

- at most 5x a bare interpreter (`python -c pass`, the same Python and environment): startup is the floor;
- at least 40x faster than the reference way to get the same figure: building the model with transformers on
  torch's meta device and summing ``numel()`` (the script checks both give the same count).

Also printed: the time to import `archzoo.cli`, which plugin modules and heavy libraries the lookup imports,
and `list` / `show` against the same interpreter yardstick. Caches (the plugin manifest, the registry index)
go to a fresh temporary folder and are warmed by one untimed run: the figures are those of the second and
later runs, the usual case; the first, cold run is printed too. Python's own bytecode cache is such a cache: it
is written to the same folder (``PYTHONPYCACHEPREFIX``), even where the environment sets
``PYTHONDONTWRITEBYTECODE``.

Each figure is given twice: wall-clock time, and the CPU time (user + system) the command's process used. On a
machine shared with other work the wall-clock ratios drift with the load; the CPU ratios much less.

Run: python benchmarks/lookup.py [--repeat 7]   (needs torch and transformers for the meta-device yardstick)
Prints figures; asserts nothing (a timed assertion fails on a loaded machine, not on a regression).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

#: The public config.json of gpt2-large (openai-community/gpt2-large on the Hugging Face hub), written out
#: here so the benchmark needs no network.
GPT2_LARGE = {
    "activation_function": "gelu_new",
    "architectures": ["GPT2LMHeadModel"],
    "attn_pdrop": 0.1,
    "bos_token_id": 50256,
    "embd_pdrop": 0.1,
    "eos_token_id": 50256,
    "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05,
    "model_type": "gpt2",
    "n_ctx": 1024,
    "n_embd": 1280,
    "n_head": 20,
    "n_layer": 36,
    "n_positions": 1024,
    "resid_pdrop": 0.1,
    "summary_activation": None,
    "summary_first_dropout": 0.1,
    "summary_proj_to_labels": True,
    "summary_type": "cls_index",
    "summary_use_proj": True,
    "vocab_size": 50257,
}

#: The yardstick: what a user without archzoo runs to get the same number.
META_COUNT = """
import sys, torch, transformers
transformers.logging.set_verbosity_error()
config = transformers.AutoConfig.from_pretrained(sys.argv[1])
with torch.device("meta"):
    model = transformers.AutoModel.from_config(config)
print(sum(p.numel() for p in model.parameters()))
"""

PYDANTIC_ALONE = """
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator
class Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    d_model: PositiveInt = Field(768, description="width")
    d_ff: PositiveInt | None = Field(None, description="feed-forward width")
    @model_validator(mode="after")
    def _check(self):
        return self
Config(d_model=1280)
"""

IMPORT_CLI = "import time; t = time.perf_counter(); import archzoo.cli; print(time.perf_counter() - t)"

WHAT_LOOKUP_IMPORTS = """
import sys
from archzoo.cli import main
sys.argv = ["archzoo", "count", "--hf-config", sys.argv[1], "--json"]
import io, contextlib
with contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
heavy = ("torch", "transformers", "rich", "mkdocs", "sympy", "yaml", "pydantic")
print(json.dumps({
    "plugins": sorted(m for m in sys.modules if m.startswith("archzoo_") and "." not in m),
    "heavy": sorted(m for m in heavy if m in sys.modules),
}))
"""


#: CPU time (user + system) of every child process that ended, so far.
def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, done.stdout


def run_cpu(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds of the command's process)."""
    cpu = _children_cpu()
    wall, _ = run(cmd, env)
    return wall, _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each command (the median is reported)")
    args = parser.parse_args()
    python = sys.executable
    work = Path(tempfile.mkdtemp(prefix="archzoo-lookup-"))
    config = work / "gpt2-large.json"
    config.write_text(json.dumps(GPT2_LARGE, indent=2))
    # Python's bytecode cache is one of the caches the warm-up run fills: an installed package ships its .pyc
    # files, and an editable install writes them on first import, unless PYTHONDONTWRITEBYTECODE forbids it (some
    # containers set it, and then every run compiles archzoo's and its plugins' sources again: ~90 ms of a lookup).
    # The cache goes to the temporary folder, so the checkout is left as it was; every command, the yardsticks
    # too, runs with it.
    env = {**os.environ, "ARCHZOO_CACHE_DIR": str(work / "cache"), "PYTHONPYCACHEPREFIX": str(work / "pycache")}
    for name in ("ARCHZOO_PLUGINS", "ARCHZOO_STRICT", "ARCHZOO_TRACE_PLUGINS", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)

    bare = [python, "-c", "pass"]
    # what the plugins' configuration models need before a single archzoo line runs: importing pydantic and
    # building one model class of a plugin configuration's shape
    pydantic = [python, "-c", PYDANTIC_ALONE]
    count = [python, "-m", "archzoo.cli", "count", "--hf-config", str(config), "--json"]
    meta = [python, "-c", META_COUNT, str(config)]
    listing = [python, "-m", "archzoo.cli", "list", "--json"]
    show = [python, "-m", "archzoo.cli", "show", "gpt2-large", "--json"]

    print(
        f"{platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    cold, out = run(count, env)  # writes the plugin manifest
    archzoo_params = json.loads(out)["params"]["total"]
    run(listing, env)  # writes the registry index
    try:
        meta_time, out = run(meta, env)
        meta_params: int | None = int(out.split()[-1])
    except (subprocess.CalledProcessError, ValueError):
        meta_time, meta_params = float("nan"), None
    names = ("bare", "pydantic", "count", "list", "show", "meta")
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    imports: list[float] = []

    def measure(name: str, cmd: list[str]) -> None:
        seconds, used = run_cpu(cmd, env)
        wall[name].append(seconds)
        cpu[name].append(used)

    for i in range(args.repeat):
        measure("bare", bare)
        measure("pydantic", pydantic)
        measure("count", count)
        imports.append(float(run([python, "-c", IMPORT_CLI], env)[1]))
        measure("list", listing)
        measure("show", show)
        if meta_params is not None and i < 3:  # seconds each: three runs give a stable median
            measure("meta", meta)
    med = {k: statistics.median(v) if v else float("nan") for k, v in wall.items()}
    med_cpu = {k: statistics.median(v) if v else float("nan") for k, v in cpu.items()}
    seen = json.loads(run([python, "-c", "import json\n" + WHAT_LOOKUP_IMPORTS, str(config)], env)[1])

    def verdict(ok: bool) -> str:
        return "goal met" if ok else "goal NOT met"

    def row(label: str, name: str, note: str = "") -> None:
        print(f"  {label:<45}{med[name] * 1000:9.1f}{med_cpu[name] * 1000:9.1f}{note}")

    print(f"medians of {args.repeat} runs (meta-device count: of {len(wall['meta'])}), in ms: wall-clock, CPU")
    row("bare interpreter (python -c pass)", "bare")
    print(f"  {'import archzoo.cli (in process, wall-clock)':<45}{statistics.median(imports) * 1000:9.1f}")
    row("pydantic and one configuration model, alone", "pydantic", "   (a process of its own)")
    row("archzoo count --hf-config gpt2-large --json", "count", f"   (first, cold run {cold * 1000:.1f} wall)")
    row("meta-device count (torch + transformers)", "meta", f"   (first run {meta_time * 1000:.1f} wall)")
    row("archzoo list --json", "list")
    row("archzoo show gpt2-large --json", "show")

    def ratio(a: str, b: str) -> tuple[float, float]:
        return med[a] / med[b], med_cpu[a] / med_cpu[b]

    bare_wall, bare_cpu = ratio("count", "bare")
    meta_wall, meta_cpu = ratio("meta", "count")
    print("targets (wall-clock, CPU)")
    print(
        f"  count / bare interpreter       {bare_wall:6.1f}x {bare_cpu:6.1f}x   (goal <= 5x: {verdict(bare_wall <= 5)})"
    )
    print(
        f"  meta-device count / count      {meta_wall:6.1f}x {meta_cpu:6.1f}x   (goal >= 40x: {verdict(meta_wall >= 40)})"
    )
    for label, name in (("list", "list"), ("show", "show")):
        w, c = ratio(name, "bare")
        print(f"  {label} / bare interpreter{' ' * (14 - len(label))}{w:6.1f}x {c:6.1f}x")
    w, c = ratio("pydantic", "bare")
    print(f"  pydantic alone / bare          {w:6.1f}x {c:6.1f}x   (the plugins' configuration models: the floor)")
    same = "the same" if meta_params == archzoo_params else f"DIFFERENT (meta device: {meta_params})"
    print(f"parameters: archzoo {archzoo_params:,}, {same} on the meta device")
    print(f"plugin modules the lookup imports: {', '.join(seen['plugins']) or 'none'}")
    print(f"heavy libraries the lookup imports: {', '.join(seen['heavy']) or 'none'}")


if __name__ == "__main__":
    main()
