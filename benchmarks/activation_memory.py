"""Benchmark: activation memory of one training step, measured against archzoo's formula and Korthikanti et al.

For BERT-base, GPT-2 small, ViT-B/16, a LLaMA-style model (TinyLlama-1.1B: the llama plugin's defaults), OPT-125M
and BLOOM-560M (the opt and bloom plugins' defaults), at a couple of N: the bytes autograd saves in one training-mode forward pass of batch 1 (dropout 0, eager attention),
measured on the meta device with saved_tensors_hooks (`archzoo.memory.measure_activations`), beside
`archzoo.memory.activation_formula` and Korthikanti et al. 2022 eq. 1 (34 N d + 5 h N² bytes a layer, 16-bit,
with dropout masks) times the layers. bf16 and fp32; full recomputation measured too; fused attention (SDPA) is
given by the formula only here (the CPU run it is checked against needs real weights; tests/test_memory.py checks
it at small configurations).

Run: python benchmarks/activation_memory.py
"""

from __future__ import annotations

import time
from typing import Any

import archzoo
from archzoo.figures import human_bytes
from archzoo.memory import activation_formula, korthikanti_layer_bytes, measure_activations

#: (label, architecture, config, N values, the nn.ModuleList of layers in its reference class)
MODELS: list[tuple[str, str, dict[str, Any], tuple[int | None, ...], tuple[str, ...]]] = [
    ("BERT-base (BertModel)", "bert", {}, (128, 512), ("encoder.layer",)),
    ("GPT-2 small (GPT2LMHeadModel)", "gpt", {}, (128, 1024), ("transformer.h",)),
    ("ViT-B/16 (ViTForImageClassification)", "vit", {}, (None,), ("vit.layers",)),
    ("TinyLlama-1.1B (LlamaForCausalLM)", "llama", {}, (512, 2048), ("model.layers",)),
    ("OPT-125M (OPTForCausalLM)", "opt", {}, (512, 2048), ("model.decoder.layers",)),
    ("BLOOM-560M (BloomForCausalLM)", "bloom", {}, (512, 2048), ("transformer.h",)),
]


def main() -> None:
    print(f"{'model':38} {'N':>5} {'dtype':5} {'measured':>15} {'formula':>15} {'Korthikanti':>15}  {'':6}  time")
    for label, arch, config, lengths, layer_list in MODELS:
        for n in lengths:
            report = archzoo.count(arch, **config) if n is None else archzoo.count(arch, seq_len=n, **config)
            ref = report.architecture.reference(report.config)
            layers = report.root.children[[c.name for c in report.root.children].index("layers")].repeat
            assert layers is not None
            korthikanti = layers.evaluate() * korthikanti_layer_bytes(report).evaluate(N=report.seq_len)
            for dtype in ("bf16", "fp32"):
                start = time.perf_counter()
                measured = measure_activations(ref, report.seq_len, dtype=dtype).total_bytes
                took = time.perf_counter() - start
                exact = activation_formula(report, dtype=dtype).bytes_at(report.seq_len)
                verdict = "exact" if exact == measured else "DIFFERS"
                shown_k = f"{korthikanti:,}" if dtype == "bf16" else "-"
                print(
                    f"{label:38} {report.seq_len:>5} {dtype:5} {measured:>15,} {exact:>15,} {shown_k:>15}  "
                    f"{verdict:6}  {took:.1f} s"
                )
            recomputed = measure_activations(ref, report.seq_len, dtype="bf16", recompute=layer_list).total_bytes
            formula = activation_formula(report, dtype="bf16", recompute=True).bytes_at(report.seq_len)
            fused = activation_formula(report, dtype="bf16", attention="fused", device="cpu").bytes_at(report.seq_len)
            print(
                f"{'':38} {'':>5} bf16  recomputation: measured {recomputed:,}, formula {formula:,} "
                f"({human_bytes(formula)}); fused attention (formula, CPU kernels): {fused:,} ({human_bytes(fused)})"
            )


if __name__ == "__main__":
    main()
