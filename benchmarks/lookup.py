"""Benchmark: a lookup (`archzoo count --hf-config`) against two yardsticks that do none of its work.

Targets (issue 20), each a ratio measured in this one run, the commands interleaved so that both sides of a
ratio see the same load on the machine:

- at most 5x a bare interpreter (`python -c pass`, the same Python and environment): startup is the floor;
- at least 40x faster than the reference way to get the same figure: building the model with transformers on
  torch's meta device and summing ``numel()`` (the script checks both give the same count).

Also printed: the time to import `archzoo.cli`, which plugin modules and heavy libraries the lookup imports,
and `list` / `show` against the same interpreter yardstick. Caches (the plugin manifest, the registry index)
go to a fresh temporary folder and are warmed by one untimed run: the figures are those of the second and
later runs, the usual case; the first, cold run is printed too.

Run: python benchmarks/lookup.py [--repeat 7]   (needs torch and transformers for the meta-device yardstick)
Prints figures; asserts nothing (a timed assertion fails on a loaded machine, not on a regression).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each command (the median is reported)")
    args = parser.parse_args()
    python = sys.executable
    work = Path(tempfile.mkdtemp(prefix="archzoo-lookup-"))
    config = work / "gpt2-large.json"
    config.write_text(json.dumps(GPT2_LARGE, indent=2))
    env = {**os.environ, "ARCHZOO_CACHE_DIR": str(work / "cache")}
    for name in ("ARCHZOO_PLUGINS", "ARCHZOO_STRICT", "ARCHZOO_TRACE_PLUGINS"):
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
    times: dict[str, list[float]] = {
        "bare": [],
        "pydantic": [],
        "count": [],
        "import": [],
        "list": [],
        "show": [],
        "meta": [],
    }
    for i in range(args.repeat):
        times["bare"].append(run(bare, env)[0])
        times["pydantic"].append(run(pydantic, env)[0])
        times["count"].append(run(count, env)[0])
        times["import"].append(float(run([python, "-c", IMPORT_CLI], env)[1]))
        times["list"].append(run(listing, env)[0])
        times["show"].append(run(show, env)[0])
        if meta_params is not None and i < 3:  # seconds each: three runs give a stable median
            times["meta"].append(run(meta, env)[0])
    med = {k: statistics.median(v) if v else float("nan") for k, v in times.items()}
    seen = json.loads(run([python, "-c", "import json\n" + WHAT_LOOKUP_IMPORTS, str(config)], env)[1])

    def verdict(ok: bool) -> str:
        return "goal met" if ok else "goal NOT met"

    print(f"medians of {args.repeat} runs (meta-device count: of {len(times['meta'])}), in ms")
    print(f"  bare interpreter (python -c pass)              {med['bare'] * 1000:8.1f}")
    print(f"  import archzoo.cli (in process)                {med['import'] * 1000:8.1f}")
    print(f"  pydantic and one configuration model, alone    {med['pydantic'] * 1000:8.1f}   (a process of its own)")
    print(
        f"  archzoo count --hf-config gpt2-large --json    {med['count'] * 1000:8.1f}   (first, cold run {cold * 1000:.1f})"
    )
    print(
        f"  meta-device count (torch + transformers)       {med['meta'] * 1000:8.1f}   (first run {meta_time * 1000:.1f})"
    )
    print(f"  archzoo list --json                            {med['list'] * 1000:8.1f}")
    print(f"  archzoo show gpt2-large --json                 {med['show'] * 1000:8.1f}")
    ratio_bare = med["count"] / med["bare"]
    ratio_meta = med["meta"] / med["count"]
    print("targets")
    print(f"  count / bare interpreter       {ratio_bare:6.1f}x   (goal <= 5x: {verdict(ratio_bare <= 5)})")
    print(f"  meta-device count / count      {ratio_meta:6.1f}x   (goal >= 40x: {verdict(ratio_meta >= 40)})")
    print(f"  list / bare interpreter        {med['list'] / med['bare']:6.1f}x")
    print(f"  show / bare interpreter        {med['show'] / med['bare']:6.1f}x")
    print(
        f"  pydantic alone / bare          {med['pydantic'] / med['bare']:6.1f}x   (the plugins' configuration models)"
    )
    same = "the same" if meta_params == archzoo_params else f"DIFFERENT (meta device: {meta_params})"
    print(f"parameters: archzoo {archzoo_params:,}, {same} on the meta device")
    print(f"plugin modules the lookup imports: {', '.join(seen['plugins']) or 'none'}")
    print(f"heavy libraries the lookup imports: {', '.join(seen['heavy']) or 'none'}")


if __name__ == "__main__":
    main()
