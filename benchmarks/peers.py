"""Benchmark: what each peer tool reports for the same models, how long it takes, and how much memory.

Run: python benchmarks/peers.py [--models bert,gpt2,vit,llama] [--tools archzoo,torchinfo,...] [--json FILE]
Needs torch 2.13.0 (CPU), transformers and the peer tools in the same environment:
    pip install torchinfo fvcore thop ptflops calflops deepspeed accelerate

Every (tool, model) pair runs in a fresh Python process. The model is the class and configuration of its
registry entry's ``reference`` (so that every tool and archzoo count the same model), built on the CPU with
random weights (no download), or on the meta device where the tool itself builds it that way (accelerate's
``estimate-memory``). The child runs the tool once and prints what the tool reports, each figure under the
name the tool gives it: parameters, "FLOPs" or "MACs", memory. The parent records the process's wall time
and peak resident memory (``os.wait4``), and the child the time of the tool's own call. archzoo runs as its
command line (``archzoo show ID --json``), which builds nothing.

The results are merged, model by model, into ``src/archzoo/site/data/peers.json`` (package data: the site's peer-tools page is made from it) (``--json`` to write
elsewhere), with the versions of every tool; ``archzoo.site.peers.peers_page`` renders them, and
``tests/test_peers.py`` reproduces every difference from archzoo's exact figure. Nothing is asserted here
(machines are noisy): run it once per model, e.g. ``--models llama``, since building LLaMA takes minutes.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: model -> (registry id, N): the registry entry whose reference class and configuration every tool builds;
#: N tokens for text (ViT-B/16 at 224 px sees 196 patches and the class token)
MODELS: dict[str, tuple[str, int]] = {
    "bert": ("bert-base-uncased", 128),
    "gpt2": ("gpt2", 128),
    "vit": ("vit-base-patch16-224", 197),
    "llama": ("tinyllama-1.1b", 128),
}
TOOLS = ("archzoo", "flop_counter", "torchinfo", "fvcore", "thop", "ptflops", "calflops", "deepspeed", "accelerate")
#: the distribution each tool is installed as, for its version
DISTRIBUTIONS = {
    "archzoo": "archzoo",
    "flop_counter": "torch",
    "torchinfo": "torchinfo",
    "fvcore": "fvcore",
    "thop": "thop",
    "ptflops": "ptflops",
    "calflops": "calflops",
    "deepspeed": "deepspeed",
    "accelerate": "accelerate",
}
RESULTS = Path(__file__).resolve().parent.parent / "src" / "archzoo" / "site" / "data" / "peers.json"


def _figure(label: str, quantity: str | None, value: int) -> dict[str, Any]:
    """One figure a tool reports: its own name for it, and which exact figure it estimates
    (``params``, ``flops``, ``weights_bytes`` in fp32, ``training_bytes`` with Adam in fp32, or None)."""
    return {"label": label, "quantity": quantity, "value": int(value)}


def _build(spec: dict[str, Any], device: str = "cpu") -> tuple[Any, dict[str, Any]]:
    """The registry entry's reference class, eager attention, with batch-1 inputs of N tokens (or one image)."""
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    config = getattr(transformers, spec["config_class"].split(".", 1)[1])(**spec["kwargs"])
    config._attn_implementation = "eager"
    with torch.device(device):
        model = getattr(transformers, spec["target"].split(".", 1)[1])(config).eval()
    if "ViT" in spec["target"]:
        inputs = {"pixel_values": torch.zeros(1, 3, config.image_size, config.image_size)}
    else:
        inputs = {"input_ids": torch.zeros(1, spec["n"], dtype=torch.long)}
    return model, inputs


def _measure(tool: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Run one tool on one model in this process: what it reports, as it labels it."""
    import torch

    if tool == "accelerate":
        return _accelerate(spec)
    model, inputs = _build(spec)
    x = next(iter(inputs.values()))
    out: dict[str, Any] = {}
    start = time.perf_counter()
    with torch.no_grad():
        if tool == "flop_counter":
            from torch.utils.flop_counter import FlopCounterMode

            with FlopCounterMode(display=False) as counter:
                model(**inputs)
            figures = [
                _figure(
                    "sum(p.numel() for p in model.parameters())", "params", sum(p.numel() for p in model.parameters())
                ),
                _figure("get_total_flops()", "flops", counter.get_total_flops()),
            ]
        elif tool == "torchinfo":
            from torchinfo import summary

            s = summary(model, input_data=inputs, verbose=0)
            figures = [
                _figure("Total params", "params", s.total_params),
                _figure("Total mult-adds", "macs", s.total_mult_adds),
                _figure("Params size", "weights_bytes", s.total_param_bytes),
                _figure("Estimated Total Size", None, s.total_input + s.total_output_bytes + s.total_param_bytes),
            ]
        elif tool == "fvcore":
            from fvcore.nn import FlopCountAnalysis, parameter_count

            def total() -> int:
                analysis = FlopCountAnalysis(model, (x,))
                analysis.unsupported_ops_warnings(False).uncalled_modules_warnings(False)
                return int(analysis.total())

            try:
                flops = total()
            except RuntimeError as exc:  # the KV cache in a decoder's output cannot be traced
                out["error"] = " ".join(str(exc).split())[:200]
                out["note"] = "figures with use_cache=False, after the default failed"
                model.config.use_cache = False
                flops = total()
            figures = [
                _figure("parameter_count()['']", "params", parameter_count(model)[""]),
                _figure("FlopCountAnalysis.total()", "macs", flops),
            ]
        elif tool == "thop":
            from thop import profile

            macs, params = profile(model, inputs=(x,), verbose=False)
            figures = [_figure("params", "params", params), _figure("macs", "macs", macs)]
        elif tool == "ptflops":
            from ptflops import get_model_complexity_info

            macs, params = get_model_complexity_info(
                model,
                tuple(x.shape[1:]),
                input_constructor=lambda _: dict(inputs),
                as_strings=False,
                print_per_layer_stat=False,
                verbose=False,
            )
            figures = [_figure("params", "params", params), _figure("macs", "macs", macs)]
        elif tool in ("calflops", "deepspeed"):
            if tool == "calflops":
                from calflops import calculate_flops

                flops, macs, params = calculate_flops(
                    model=model, kwargs=dict(inputs), output_as_string=False, print_results=False, print_detailed=False
                )
            else:
                from deepspeed.profiling.flops_profiler import get_model_profile

                flops, macs, params = get_model_profile(
                    model, kwargs=dict(inputs), print_profile=False, detailed=False, as_string=False
                )
            figures = [
                _figure("params", "params", params),
                _figure("flops", "flops", flops),
                _figure("macs", "macs", macs),
            ]
        else:
            raise SystemExit(f"unknown tool {tool!r}; expected one of {', '.join(TOOLS)}")
    out["tool_seconds"] = round(time.perf_counter() - start, 3)
    out["figures"] = figures
    return out


def _accelerate(spec: dict[str, Any]) -> dict[str, Any]:
    """``accelerate estimate-memory``'s logic, offline: the model built empty (meta) from its configuration,
    as the command builds it from the Hub's, then its sizes and the Adam training estimate in float32."""
    from accelerate import init_empty_weights
    from accelerate.commands.estimate import estimate_training_usage
    from accelerate.utils import calculate_maximum_sizes

    start = time.perf_counter()
    with init_empty_weights():
        model, _ = _build(spec)
    total, (largest, _) = calculate_maximum_sizes(model)
    training = estimate_training_usage(total, "float32")
    return {
        "tool_seconds": round(time.perf_counter() - start, 3),
        "figures": [
            _figure("Total Size (float32)", "weights_bytes", total),
            _figure("Training using Adam (float32)", "training_bytes", max(training.values())),
            _figure("Largest Layer (float32)", None, largest),
        ],
    }


def _spec(model_name: str) -> dict[str, Any]:
    """The registry entry's reference: the class, configuration and keywords every tool builds."""
    from archzoo.registry import load_registry

    model_id, n = MODELS[model_name]
    reference = load_registry().get_model(model_id).spec.reference
    assert reference is not None and reference.config_class is not None, model_id
    return {
        "id": model_id,
        "n": n,
        "target": reference.target,
        "config_class": reference.config_class,
        "kwargs": reference.kwargs,
    }


def _run(tool: str, spec: dict[str, Any]) -> dict[str, Any]:
    """One fresh process: its report, wall time and peak resident memory."""
    if tool == "archzoo":
        cmd = [sys.executable, "-m", "archzoo.cli", "show", spec["id"], "--json"]
        if "ViT" not in spec["target"]:
            cmd += ["--seq-len", str(spec["n"])]
    else:
        cmd = [sys.executable, __file__, "--one", tool, json.dumps(spec)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own rusage: its peak resident memory
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if os.waitstatus_to_exitcode(status) != 0:
        return {"error": (stderr.strip().splitlines() or ["(no message)"])[-1][:200], "wall_seconds": round(wall, 2)}
    if tool == "archzoo":
        report = json.loads(stdout)["report"]
        data: dict[str, Any] = {
            "figures": [
                _figure("params.total", "params", report["params"]["total"]),
                _figure("flops.forward", "flops", report["flops"]["forward"]),
                _figure("memory.weights_bytes.fp32", "weights_bytes", report["memory"]["weights_bytes"]["fp32"]),
                _figure(
                    "memory.training_bytes_adam.fp32", "training_bytes", report["memory"]["training_bytes_adam"]["fp32"]
                ),
            ]
        }
    else:
        data = json.loads(stdout.strip().splitlines()[-1])
    data.update(wall_seconds=round(wall, 2), peak_rss_mib=round(usage.ru_maxrss / 1024, 1))  # Linux: KiB
    return data


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in sorted({*DISTRIBUTIONS.values(), "transformers"}):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", nargs=2, metavar=("TOOL", "SPEC"), help=argparse.SUPPRESS)
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, of {', '.join(TOOLS)}")
    parser.add_argument("--json", metavar="FILE", default=str(RESULTS), help="merge the figures into FILE")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_measure(args.one[0], json.loads(args.one[1]))))
        return
    models, tools = args.models.split(","), args.tools.split(",")
    unknown = [m for m in models if m not in MODELS] + [t for t in tools if t not in TOOLS]
    if unknown:
        parser.error(
            f"unknown model or tool {', '.join(unknown)}; models: {', '.join(MODELS)}; tools: {', '.join(TOOLS)}"
        )
    path = Path(args.json)
    results: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    results.setdefault("models", {})
    results["versions"] = _versions()
    results["machine"] = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}"
    for model_name in models:
        spec = _spec(model_name)
        entry = results["models"].setdefault(model_name, {})
        entry.update(id=spec["id"], model=spec["target"], n=spec["n"])
        entry.setdefault("tools", {})
        for tool in tools:
            figures = _run(tool, spec)
            entry["tools"][tool] = figures
            shown = ", ".join(f"{f['label']} {f['value']:,}" for f in figures.get("figures", []))
            print(
                f"{model_name:6} {tool:13} {shown} {figures.get('error', '')} {figures.get('wall_seconds')} s",
                flush=True,
            )
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
