"""Benchmark: what each peer tool reports for the same models, how long it takes, and how much memory.

Run: python benchmarks/peers.py [--json FILE] [--models bert,gpt2,vit,llama] [--tools ...]
Needs torch 2.13.0 (CPU), transformers and the peer tools in the same environment:
    pip install torchinfo fvcore thop ptflops calflops deepspeed accelerate

Every (tool, model) pair runs in a fresh Python process: it builds the model on the CPU from its
transformers configuration (no download), runs the tool once, and prints what the tool reports:
parameters, its "FLOPs" or "MACs" as the tool labels them, and memory where the tool estimates it. The
parent records the process's wall time and peak resident memory (``os.wait4``), and the time of the
tool's own call. ``archzoo`` runs as its command line (``archzoo show ID --json``), which builds nothing.
Nothing is asserted: the figures are printed for the reader (machines are noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

#: model -> (transformers class, configuration class and keywords, registry id, N): the class each registry
#: entry describes, so that archzoo's figures are for the same model; N = 128 tokens for text
MODELS: dict[str, tuple[str, str, dict[str, Any], str, int]] = {
    "bert": ("BertModel", "BertConfig", {}, "bert-base-uncased", 128),
    "gpt2": ("GPT2LMHeadModel", "GPT2Config", {}, "gpt2", 128),
    # the registry entry's class: ViT-B/16 with its 1000-class ImageNet head
    "vit": ("ViTForImageClassification", "ViTConfig", {"num_labels": 1000}, "vit-base-patch16-224", 197),
    "llama": (
        "LlamaForCausalLM",
        "LlamaConfig",
        dict(
            vocab_size=32000,
            hidden_size=2048,
            intermediate_size=5632,
            num_hidden_layers=22,
            num_attention_heads=32,
            num_key_value_heads=4,
            max_position_embeddings=2048,
        ),
        "tinyllama-1.1b",
        128,
    ),
}
TOOLS = ("archzoo", "flop_counter", "torchinfo", "fvcore", "thop", "ptflops", "calflops", "deepspeed", "accelerate")


def _build(model_name: str) -> tuple[Any, dict[str, Any]]:
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    cls, config_cls, kwargs, _, n = MODELS[model_name]
    config = getattr(transformers, config_cls)(**kwargs)
    config._attn_implementation = "eager"
    model = getattr(transformers, cls)(config).eval()
    if model_name == "vit":
        inputs = {"pixel_values": torch.zeros(1, 3, 224, 224)}
    else:
        inputs = {"input_ids": torch.zeros(1, n, dtype=torch.long)}
    return model, inputs


def _measure(tool: str, model_name: str) -> dict[str, Any]:
    """Run one tool on one model in this process; what it reports, as it labels it."""
    import torch

    model, inputs = _build(model_name)
    x = next(iter(inputs.values()))
    start = time.perf_counter()
    out: dict[str, Any]
    with torch.no_grad():
        if tool == "flop_counter":
            from torch.utils.flop_counter import FlopCounterMode

            with FlopCounterMode(display=False) as counter:
                model(**inputs)
            out = {"params": sum(p.numel() for p in model.parameters()), "flops": counter.get_total_flops()}
        elif tool == "torchinfo":
            from torchinfo import summary

            s = summary(model, input_data=inputs, verbose=0)
            out = {
                "params": s.total_params,
                "macs": s.total_mult_adds,
                "memory_bytes": s.total_input + s.total_output_bytes + s.total_param_bytes,
            }
        elif tool == "fvcore":
            from fvcore.nn import FlopCountAnalysis, parameter_count

            analysis = FlopCountAnalysis(model, (x,))
            analysis.unsupported_ops_warnings(False).uncalled_modules_warnings(False)
            out = {"params": parameter_count(model)[""], "flops (one per multiply-add)": analysis.total()}
        elif tool == "thop":
            from thop import profile

            macs, params = profile(model, inputs=(x,), verbose=False)
            out = {"params": int(params), "macs": int(macs)}
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
            out = {"params": int(params), "macs": int(macs)}
        elif tool == "calflops":
            from calflops import calculate_flops

            flops, macs, params = calculate_flops(
                model=model, kwargs=dict(inputs), output_as_string=False, print_results=False, print_detailed=False
            )
            out = {"params": int(params), "flops": int(flops), "macs": int(macs)}
        elif tool == "deepspeed":
            from deepspeed.profiling.flops_profiler import get_model_profile

            flops, macs, params = get_model_profile(
                model, kwargs=dict(inputs), print_profile=False, detailed=False, as_string=False
            )
            out = {"params": int(params), "flops": int(flops), "macs": int(macs)}
        elif tool == "accelerate":
            from accelerate.utils import calculate_maximum_sizes

            total, (largest, _) = calculate_maximum_sizes(model)
            out = {"memory_bytes (weights)": int(total), "largest layer bytes": int(largest)}
        else:
            raise SystemExit(f"unknown tool {tool!r}; expected one of {', '.join(TOOLS)}")
    out["tool_seconds"] = round(time.perf_counter() - start, 3)
    return out


def _run(tool: str, model_name: str) -> dict[str, Any]:
    """One fresh process: its report, wall time and peak resident memory."""
    if tool == "archzoo":
        _, _, _, model_id, n = MODELS[model_name]
        cmd = [sys.executable, "-m", "archzoo.cli", "show", model_id, "--json"]
        if model_name != "vit":
            cmd += ["--seq-len", str(n)]
    else:
        cmd = [sys.executable, __file__, "--one", tool, model_name]
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
    data = json.loads(stdout if tool == "archzoo" else stdout.strip().splitlines()[-1])
    if tool == "archzoo":
        report = data["report"]
        data = {"params": report["params"]["total"], "flops": report["flops"]["forward"]}
    data.update(wall_seconds=round(wall, 2), peak_rss_mib=round(usage.ru_maxrss / 1024, 1))  # Linux: KiB
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", nargs=2, metavar=("TOOL", "MODEL"), help=argparse.SUPPRESS)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_measure(*args.one)))
        return
    results: dict[str, dict[str, Any]] = {}
    for model_name in args.models.split(","):
        results[model_name] = {}
        for tool in args.tools.split(","):
            figures = _run(tool, model_name)
            results[model_name][tool] = figures
            shown = ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in figures.items())
            print(f"{model_name:6} {tool:13} {shown}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
