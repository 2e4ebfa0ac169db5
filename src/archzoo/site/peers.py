"""The peer tools page: what each tool reports for the same models, beside archzoo's exact figure, and why.

`peers_page` is a plain function of ``src/archzoo/site/data/peers.json`` (package data: the site's peer-tools page is made from it) (written by ``benchmarks/peers.py``):
a table per model (the tool, what it calls the figure, its value, its ratio to the exact figure, the
tool's time and its process's peak memory), then, for every figure that differs from the exact one, the
convention that explains it, each named after the test in ``tests/test_peers.py`` that reproduces it.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

__all__ = ["EXPLANATIONS", "TOOLS", "Explanation", "explanation_for", "peers_page"]

#: the benchmark's tool keys, in the page's order, with the name a reader knows the tool by
TOOLS = {
    "archzoo": "archzoo (`archzoo show ID --json`)",
    "flop_counter": "torch `FlopCounterMode`",
    "torchinfo": "torchinfo `summary`",
    "fvcore": "fvcore `FlopCountAnalysis`",
    "thop": "thop `profile`",
    "ptflops": "ptflops `get_model_complexity_info`",
    "calflops": "calflops `calculate_flops`",
    "deepspeed": "DeepSpeed `get_model_profile`",
    "accelerate": "accelerate `estimate-memory`",
}
#: what each exact figure is, for the table
QUANTITIES = {
    "params": "parameters",
    "flops": "forward FLOPs",
    "macs": "forward FLOPs",
    "weights_bytes": "weights, fp32 bytes",
    "training_bytes": "training with Adam, fp32 bytes",
}
TEST_FILE = "tests/test_peers.py"


@dataclass(frozen=True)
class Explanation:
    """Why a tool's figure differs from the exact one, and the test that reproduces the difference."""

    text: str
    test: str


_MACS = "MACs, one per multiply-add: half the FLOPs of every matrix product"
_CALFLOPS = (
    "FLOPs of the functions it patches by name (F.linear, torch.matmul, torch.addmm, F.conv2d, F.layer_norm, "
    "F.softmax, F.silu, ...): every matrix product as FlopCounterMode counts it, plus 5 per LayerNorm element, "
    "1 per softmax and SiLU element, a torch.addmm's bias once per call (GPT-2's Conv1D) and a convolution's "
    "bias once per output position; Python operators (`a + b`), and GELU bound by transformers before the "
    "patch, are not seen"
)
#: (tool, quantity) -> the convention that explains the tool's difference from the exact figure
EXPLANATIONS: dict[tuple[str, str], Explanation] = {
    ("torchinfo", "params"): Explanation(
        "sums every module's own parameters, so a weight tied to another module (GPT-2's LM head, which is "
        "the token embedding) is counted once per module that holds it",
        "test_torchinfo_counts_a_tied_weight_once_per_module",
    ),
    ("torchinfo", "weights_bytes"): Explanation(
        "4 bytes per parameter of the layers it lists: a tied weight twice (GPT-2's head), and parameters a "
        "module holds directly, outside any layer, left out (ViT's class token and position embeddings)",
        "test_torchinfo_counts_a_tied_weight_once_per_module",
    ),
    ("torchinfo", "macs"): Explanation(
        "`Total mult-adds` is each layer's weights and biases times its output's first dimension, the batch, "
        "not times the tokens: the parameter count for a sequence model at batch 1; a layer whose class name "
        "contains 'Conv' multiplies by the output's trailing dimensions instead (ViT's patch convolution, "
        "rightly; GPT-2's Conv1D, a linear layer, by its output width); parameters held outside weight/bias "
        "(ViT's class token, position embeddings) are left out",
        "test_torchinfo_mult_adds_are_weights_times_batch",
    ),
    ("fvcore", "macs"): Explanation(
        _MACS + ", plus 5 per LayerNorm element (its `norm` handle); RMSNorm and elementwise operations are not "
        "counted. The default forward of a decoder fails: the KV cache in the output cannot be traced, so the "
        "benchmark retries with use_cache=False",
        "test_fvcore_is_macs_plus_layer_norms",
    ),
    ("thop", "params"): Explanation(
        "counts only the parameters of modules it has a rule for (nn.Linear, nn.LayerNorm, nn.Conv2d, ...): "
        "not nn.Embedding, not transformers' Conv1D (GPT-2's attention and MLP), not LLaMA's RMSNorm, not "
        "parameters held by a module directly (ViT's class token and position embeddings)",
        "test_thop_counts_modules_it_has_rules_for",
    ),
    ("thop", "macs"): Explanation(
        _MACS + ", of the modules it has rules for only: the attention products (torch.matmul in a module's "
        "forward) and GPT-2's Conv1D layers are missed; it adds 4 per LayerNorm element",
        "test_thop_macs_miss_attention_products",
    ),
    ("ptflops", "macs"): Explanation(
        _MACS + ", plus 1 per LayerNorm element (its `affine` check misses LayerNorm's elementwise_affine), "
        "1 per softmax and SiLU element, an nn.Linear's bias once per token, a convolution's bias once per "
        "output position and a torch.addmm's bias once per call (GPT-2's Conv1D)",
        "test_ptflops_is_macs_plus_elementwise",
    ),
    ("calflops", "flops"): Explanation(_CALFLOPS, "test_calflops_is_flops_plus_elementwise"),
    ("calflops", "macs"): Explanation(
        "MACs, every matrix product's multiply-adds: exactly half the FLOPs", "test_calflops_is_flops_plus_elementwise"
    ),
    ("deepspeed", "flops"): Explanation(
        "calflops is a port of DeepSpeed's flops profiler, with the same rules and the same figures: " + _CALFLOPS,
        "test_deepspeed_matches_calflops_rules",
    ),
    ("deepspeed", "macs"): Explanation(
        "MACs, every matrix product's multiply-adds: exactly half the FLOPs", "test_deepspeed_matches_calflops_rules"
    ),
    ("accelerate", "weights_bytes"): Explanation(
        "4 bytes per parameter and every buffer at its own size (BERT's int64 position and token-type ids, "
        "LLaMA's rotary frequencies); the model is built empty on the meta device, where transformers does not "
        "tie GPT-2's LM head to its embedding, so that weight counts twice",
        "test_accelerate_counts_buffers_and_untied_heads",
    ),
    ("accelerate", "training_bytes"): Explanation(
        "4 times its weights' size (weights, gradients and Adam's two states, 16 bytes a parameter as archzoo "
        "counts), so its buffers and untied head four times; activations are not counted by either",
        "test_accelerate_counts_buffers_and_untied_heads",
    ),
}


def explanation_for(tool: str, quantity: str | None) -> Explanation | None:
    return EXPLANATIONS.get((tool, quantity or ""))


def _exact(tools: dict[str, Any]) -> dict[str, int]:
    """archzoo's figures, by quantity; a MACs figure compares with the exact FLOPs."""
    exact = {f["quantity"]: f["value"] for f in tools.get("archzoo", {}).get("figures", []) if f["quantity"]}
    if "flops" in exact:
        exact["macs"] = exact["flops"]
    return exact


def _cell(text: Any) -> str:
    """Text in a Markdown table cell or line: a tool's error message (``<class 'dict'>``) shown as written,
    not read as HTML."""
    return escape(str(text), quote=False).replace("|", "\\|").replace("\n", " ")


def _code(text: Any) -> str:
    """Text as a Markdown code span (shown literally already: no HTML escaping), in a table cell."""
    return "`" + str(text).replace("`", "'").replace("|", "\\|").replace("\n", " ") + "`"


def _ratio(value: int, exact: int | None) -> str:
    if not exact:
        return ""
    if value == exact:
        return "1 (exact)"
    ratio = value / exact
    return f"{ratio:.6f}" if abs(ratio - 1) < 1e-3 else f"{ratio:.4f}"  # a near miss still shows as one


def _seconds(run: dict[str, Any]) -> str:
    wall = run.get("wall_seconds")
    tool = run.get("tool_seconds")
    if wall is None:
        return ""
    return f"{wall:.2f} s" + (f" ({tool:.2f} s in the call)" if tool is not None else "")


def _model_section(name: str, model: dict[str, Any], test_link: str | None) -> list[str]:
    tools = model.get("tools", {})
    exact = _exact(tools)
    lines = [
        f"## {_cell(model.get('id', name))}",
        "",
        f"{_code(model.get('model', ''))}, batch 1, N = {model.get('n', '?')} tokens; exact figures by archzoo, "
        "checked against FlopCounterMode and `sum(p.numel())` in the test suite.",
        "",
        "| tool | what it calls the figure | figure | value | ratio to exact | time (whole process) | peak memory |",
        "|---|---|---|--:|--:|--:|--:|",
    ]
    differences: list[str] = []
    order = [t for t in TOOLS if t in tools] + [t for t in tools if t not in TOOLS]
    for tool in order:
        run = tools[tool]
        shown = TOOLS.get(tool, _cell(tool))
        memory = f"{run['peak_rss_mib']:,.0f} MiB" if "peak_rss_mib" in run else ""
        figures = run.get("figures", [])
        if not figures:
            lines.append(
                f"| {shown} | fails: {_cell(run.get('error', 'no figure'))} | | | | {_seconds(run)} | {memory} |"
            )
            continue
        for i, figure in enumerate(figures):
            quantity = figure.get("quantity")
            value = int(figure["value"])
            target = exact.get(quantity) if quantity else None
            what = QUANTITIES.get(quantity or "", "not comparable")
            lines.append(
                f"| {shown if i == 0 else ''} | {_code(figure['label'])} | {what} | {value:,} | {_ratio(value, target)} "
                f"| {_seconds(run) if i == 0 else ''} | {memory if i == 0 else ''} |"
            )
            if target is None or value == target or tool == "archzoo":
                continue
            explained = explanation_for(tool, quantity)
            test = f"[`{explained.test}`]({test_link})" if explained and test_link else ""
            why = (
                f"{explained.text}. Checked by {test or f'`{TEST_FILE}::{explained.test}`'}."
                if explained
                else "not explained yet: no test reproduces this difference."
            )
            differences.append(f"- **{TOOLS.get(tool, _cell(tool))}, {_code(figure['label'])}** ({value:,}): {why}")
        if run.get("note"):
            differences.append(
                f"- **{TOOLS.get(tool, _cell(tool))}**: {_cell(run['note'])} ({_cell(run.get('error', ''))})."
            )
    lines.append("")
    fastest = _fastest_peer(tools)
    if fastest and "wall_seconds" in tools.get("archzoo", {}):
        peer, seconds = fastest
        lines += [
            f"archzoo took {tools['archzoo']['wall_seconds']:.2f} s as a whole process; the fastest peer that counts "
            f"the same model's FLOPs, {TOOLS.get(peer, peer)}, took {seconds:.2f} s.",
            "",
        ]
    if differences:
        lines += ["### Why they differ", "", *differences, ""]
    return lines


def _fastest_peer(tools: dict[str, Any]) -> tuple[str, float] | None:
    """The quickest tool other than archzoo that gave a FLOPs or MACs figure."""
    timed = [
        (run["wall_seconds"], tool)
        for tool, run in tools.items()
        if tool != "archzoo"
        and "wall_seconds" in run
        and any(f.get("quantity") in ("flops", "macs") for f in run.get("figures", []))
    ]
    if not timed:
        return None
    seconds, tool = min(timed)
    return tool, seconds


def peers_page(results: dict[str, Any], *, test_link: str | None = None) -> str:
    """The Markdown page of ``results`` (the JSON ``benchmarks/peers.py`` writes): a table per model, then the
    convention behind each difference from archzoo's exact figure, naming the test that reproduces it, linked
    to ``test_link`` when given (the test file's address in the repository: a relative link would leave the
    site and fail ``mkdocs build --strict``)."""
    versions = results.get("versions", {})
    lines = [
        "# Peer tools, side by side",
        "",
        "What the tools people reach for report for the same models, next to archzoo's exact figures: each "
        "tool ran once per model in a fresh process (its wall time and peak resident memory as a whole "
        "process), on randomly initialised weights built from the registry entry's own class and configuration. "
        "A ratio is the tool's figure over the exact one; a figure a tool calls MACs is compared with the exact "
        "FLOPs, so one MAC per multiply-add shows as about 0.5.",
        "",
    ]
    if versions:
        lines += ["Versions: " + ", ".join(f"{_cell(k)} {_cell(v)}" for k, v in sorted(versions.items())) + "."]
    if results.get("machine"):
        lines += ["", f"Machine: {_cell(results['machine'])}."]
    lines.append("")
    for name, model in results.get("models", {}).items():
        lines += _model_section(name, model, test_link)
    return "\n".join(lines).rstrip() + "\n"
