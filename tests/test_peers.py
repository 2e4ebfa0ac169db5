"""Every peer tool's difference from the exact figure, reproduced from the convention that explains it.

Each explanation on the peer tools page (`archzoo.site.peers.EXPLANATIONS`) names one test here. The test
runs the tool on small randomised configurations of the four benchmarked classes (BERT, GPT-2, ViT, LLaMA)
and checks that the tool's figure equals the exact one (transformers' model: ``sum(p.numel())``,
FlopCounterMode) changed by the stated convention, each term measured on the model by forward hooks or a
TorchFunctionMode, never by the tool. DeepSpeed, too heavy for the dev extra, is checked on the committed
full-size figures of ``src/archzoo/site/data/peers.json`` (package data: the site's peer-tools page is made from it), as are all the others, against FlopCounterMode on
the meta device. The page renderer, `peers_page`, is tested last.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archzoo.site.peers import EXPLANATIONS, peers_page
from archzoo.testing import build_model

pytestmark = [pytest.mark.reference, pytest.mark.sweep]

RESULTS = Path(__file__).parent.parent / "src" / "archzoo" / "site" / "data" / "peers.json"
N = 16  # tokens of the small text models; the small ViT sees a 32 px image in 8 px patches: 17 tokens

#: name -> (model class, configuration class, keywords): small, with every kind of layer the real one has
SMALL = {
    "bert": (
        "BertModel",
        "BertConfig",
        dict(
            vocab_size=99,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            max_position_embeddings=64,
        ),
    ),
    "gpt2": ("GPT2LMHeadModel", "GPT2Config", dict(n_layer=2, n_embd=32, n_head=4, vocab_size=99, n_positions=64)),
    "vit": (
        "ViTForImageClassification",
        "ViTConfig",
        dict(
            image_size=32,
            patch_size=8,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            num_labels=5,
        ),
    ),
    "llama": (
        "LlamaForCausalLM",
        "LlamaConfig",
        dict(
            vocab_size=99,
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
        ),
    ),
}


def build(T: Any, model_class: str, config_class: str, kwargs: dict[str, Any], device: str = "cpu") -> Any:
    config = getattr(T, config_class)(**kwargs)
    if device == "cpu":  # fvcore cannot trace a KV cache (test_fvcore_fails_on_a_decoder_s_cache); on the meta
        config.use_cache = False  # device, without one, transformers reads the position ids for packed sequences
    return build_model(getattr(T, model_class), config, device=device)


def inputs_of(model: Any, n: int = N) -> dict[str, Any]:
    import torch

    device = next(model.parameters()).device
    if "ViT" in type(model).__name__:
        size = model.config.image_size
        return {"pixel_values": torch.zeros(1, 3, size, size, device=device)}
    return {"input_ids": torch.zeros(1, n, dtype=torch.long, device=device)}


def measure(model: Any, inputs: dict[str, Any]) -> dict[str, int]:
    """The exact figures and every term a convention adds or drops, measured on one forward pass."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
    from torch.utils.flop_counter import FlopCounterMode
    from transformers.pytorch_utils import Conv1D

    terms = dict.fromkeys(
        (
            "layer_norm",
            "softmax",
            "silu",
            "linear_bias",
            "conv_bias",
            "addmm_bias",
            "conv1d_macs",
            "matmul_macs",
        ),
        0,
    )

    class Functions(TorchFunctionMode):
        """The elements of the functions the patching tools see by name, and the functional matmuls."""

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if func is F.softmax:
                terms["softmax"] += args[0].numel()
            elif func is F.silu:
                terms["silu"] += args[0].numel()
            elif func in (torch.matmul, torch.Tensor.matmul):
                a, b = args[0], args[1]
                terms["matmul_macs"] += a.numel() * b.shape[-1]
            return func(*args, **(kwargs or {}))

    def hook(module: Any, args: Any, output: Any) -> None:
        if isinstance(module, torch.nn.LayerNorm):
            terms["layer_norm"] += args[0].numel()
        elif isinstance(module, torch.nn.Linear) and module.bias is not None:
            terms["linear_bias"] += output.numel()
        elif isinstance(module, torch.nn.Conv2d) and module.bias is not None:
            terms["conv_bias"] += output.numel()  # batch 1: the channels at every output position
        elif isinstance(module, Conv1D):
            terms["addmm_bias"] += module.bias.numel()
            terms["conv1d_macs"] += args[0].numel() * module.nf

    handles = [m.register_forward_hook(hook) for m in model.modules()]
    try:
        # the function mode outside FlopCounterMode's own: inside it, transformers' checks of mask values on
        # the meta device run as data-dependent operations and fail
        with torch.no_grad(), Functions(), FlopCounterMode(display=False) as counter:
            model(**inputs)
    finally:
        for handle in handles:
            handle.remove()
    terms["flops"] = counter.get_total_flops()
    terms["params"] = sum(p.numel() for p in model.parameters())
    terms["params_per_module"] = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    terms["buffer_bytes"] = sum(b.numel() * b.element_size() for b in model.buffers())
    return terms


@pytest.fixture(scope="module", params=list(SMALL))
def small(request: Any, T: Any) -> tuple[str, Any, dict[str, Any], dict[str, int]]:
    """A small model of each benchmarked class, its inputs and its measured terms."""
    model_class, config_class, kwargs = SMALL[request.param]
    model = build(T, model_class, config_class, kwargs)
    inputs = inputs_of(model)
    return request.param, model, inputs, measure(model, inputs)


# ---- each tool's convention, reproduced -------------------------------------------------------------------
# Each rule is the explanation on the page, as arithmetic: it takes the measured terms and returns the tool's
# figure. The small-model tests check it against the tool itself; the committed figures against it at full size.


def fvcore_macs(t: dict[str, int]) -> int:
    return t["flops"] // 2 + 5 * t["layer_norm"]


def thop_macs(t: dict[str, int]) -> int:
    return t["flops"] // 2 - t["matmul_macs"] - t["conv1d_macs"] + 4 * t["layer_norm"]


def ptflops_macs(t: dict[str, int]) -> int:
    elementwise = t["layer_norm"] + t["softmax"] + t["silu"]
    return t["flops"] // 2 + elementwise + t["linear_bias"] + t["conv_bias"] + t["addmm_bias"]


def calflops_flops(t: dict[str, int]) -> int:
    return t["flops"] + 5 * t["layer_norm"] + t["softmax"] + t["silu"] + t["addmm_bias"] + t["conv_bias"]


RULES: dict[tuple[str, str], Callable[[dict[str, int]], int]] = {
    ("fvcore", "FlopCountAnalysis.total()"): fvcore_macs,
    ("thop", "macs"): thop_macs,
    ("ptflops", "macs"): ptflops_macs,
    ("calflops", "flops"): calflops_flops,
    ("calflops", "macs"): lambda t: t["flops"] // 2,
    ("deepspeed", "flops"): calflops_flops,
    ("deepspeed", "macs"): lambda t: t["flops"] // 2,
    ("torchinfo", "Total params"): lambda t: t["params_per_module"],
    ("torchinfo", "Total mult-adds"): lambda t: t["torchinfo_mult_adds"],
    ("torchinfo", "Params size"): lambda t: 4 * t["leaf_params"],
    ("fvcore", "parameter_count()['']"): lambda t: t["params"],
    ("ptflops", "params"): lambda t: t["params"],
    ("calflops", "params"): lambda t: t["params"],
    ("deepspeed", "params"): lambda t: t["params"],
}


def test_fvcore_is_macs_plus_layer_norms(small: Any) -> None:
    fvcore = pytest.importorskip("fvcore.nn")
    _, model, inputs, terms = small
    analysis = fvcore.FlopCountAnalysis(model, tuple(inputs.values()))
    analysis.unsupported_ops_warnings(False).uncalled_modules_warnings(False)
    assert analysis.total() == fvcore_macs(terms)
    assert fvcore.parameter_count(model)[""] == terms["params"]


def test_fvcore_fails_on_a_decoder_s_cache(T: Any) -> None:
    """With the KV cache on (transformers' default), the traced output holds a DynamicCache: fvcore fails."""
    fvcore = pytest.importorskip("fvcore.nn")
    model = build(T, *SMALL["gpt2"])
    model.config.use_cache = True
    with pytest.raises(RuntimeError, match="DynamicCache"):
        fvcore.FlopCountAnalysis(model, tuple(inputs_of(model).values())).total()


def test_calflops_is_flops_plus_elementwise(small: Any) -> None:
    calflops = pytest.importorskip("calflops")
    _, model, inputs, terms = small
    flops, macs, params = calflops.calculate_flops(
        model=model, kwargs=inputs, output_as_string=False, print_results=False, print_detailed=False
    )
    assert (flops, macs, params) == (calflops_flops(terms), terms["flops"] // 2, terms["params"])


def test_ptflops_is_macs_plus_elementwise(small: Any) -> None:
    ptflops = pytest.importorskip("ptflops")
    _, model, inputs, terms = small
    x = next(iter(inputs.values()))
    macs, params = ptflops.get_model_complexity_info(
        model,
        tuple(x.shape[1:]),
        input_constructor=lambda _: dict(inputs),
        as_strings=False,
        print_per_layer_stat=False,
        verbose=False,
    )
    assert (macs, params) == (ptflops_macs(terms), terms["params"])


def thop_params(model: Any) -> int:
    """The parameters of the modules thop has a rule for, each module's own."""
    from thop.profile import register_hooks

    return sum(p.numel() for m in model.modules() if type(m) in register_hooks for p in m.parameters(recurse=False))


def test_thop_counts_modules_it_has_rules_for(small: Any) -> None:
    import copy

    thop = pytest.importorskip("thop")
    name, model, inputs, terms = small
    _, params = thop.profile(copy.deepcopy(model), inputs=tuple(inputs.values()), verbose=False)
    assert params == thop_params(model) < terms["params"]
    if name in ("bert", "llama"):  # no rule for nn.Embedding (GPT-2's is also its LM head, an nn.Linear)
        assert thop_params(model) <= terms["params"] - model.get_input_embeddings().weight.numel()


def test_thop_macs_miss_attention_products(small: Any) -> None:
    import copy

    thop = pytest.importorskip("thop")
    _, model, inputs, terms = small
    macs, _ = thop.profile(copy.deepcopy(model), inputs=tuple(inputs.values()), verbose=False)
    assert terms["matmul_macs"] > 0  # the attention products: torch.matmul inside a module's forward
    assert macs == thop_macs(terms)


def torchinfo_mult_adds(model: Any, inputs: dict[str, Any]) -> int:
    """Each module's own weight and bias times its output's first dimension (trailing ones for a 'Conv')."""
    import math

    import torch

    total = 0

    def hook(module: Any, args: Any, output: Any) -> None:
        nonlocal total
        own = [p for name, p in module.named_parameters(recurse=False) if name in ("weight", "bias")]
        if own:
            shape = output.shape
            factor = math.prod(shape[:1] + shape[2:]) if "Conv" in type(module).__name__ else shape[0]
            total += sum(p.numel() for p in own) * factor

    handles = [m.register_forward_hook(hook) for m in model.modules() if not list(m.children())]
    try:
        with torch.no_grad():
            model(**inputs)
    finally:
        for handle in handles:
            handle.remove()
    return total


def test_torchinfo_mult_adds_are_weights_times_batch(small: Any) -> None:
    torchinfo = pytest.importorskip("torchinfo")
    name, model, inputs, terms = small
    got = torchinfo.summary(model, input_data=inputs, verbose=0).total_mult_adds
    assert got == torchinfo_mult_adds(model, inputs)
    if name in ("bert", "llama"):  # no Conv in the name, every parameter a weight or a bias: the count itself
        assert got == terms["params"]
        longer = inputs_of(model, 2 * N)
        assert torchinfo.summary(model, input_data=longer, verbose=0).total_mult_adds == got  # not per token


def test_torchinfo_counts_a_tied_weight_once_per_module(small: Any) -> None:
    torchinfo = pytest.importorskip("torchinfo")
    name, model, inputs, terms = small
    s = torchinfo.summary(model, input_data=inputs, verbose=0)
    assert s.total_params == terms["params_per_module"]
    # its size: 4 bytes for each parameter of the layers it lists (ViT's class token and positions left out)
    leaves = [m for m in model.modules() if not list(m.children())]
    assert s.total_param_bytes == 4 * sum(p.numel() for m in leaves for p in m.parameters(recurse=False))
    tied = terms["params_per_module"] - terms["params"]
    assert tied == (model.get_input_embeddings().weight.numel() if name == "gpt2" else 0)


def test_accelerate_counts_buffers_and_untied_heads(small: Any) -> None:
    pytest.importorskip("accelerate")
    from accelerate import init_empty_weights
    from accelerate.commands.estimate import estimate_training_usage
    from accelerate.utils import calculate_maximum_sizes

    name, model, _, terms = small
    with init_empty_weights():
        empty = type(model)(model.config)

    def tied(m: Any) -> bool:
        head = getattr(m, "lm_head", None)
        return head is not None and head.weight is m.get_input_embeddings().weight

    untied = tied(model) and not tied(empty)  # tied on the CPU, not on the meta device
    assert untied == (name == "gpt2")
    total, _ = calculate_maximum_sizes(empty)
    twice = model.get_input_embeddings().weight.numel() if untied else 0
    assert total == 4 * (terms["params"] + twice) + terms["buffer_bytes"]
    assert max(estimate_training_usage(total, "float32").values()) == 4 * total


def test_every_rule_is_explained() -> None:
    """Every tool and quantity the page explains names a test of this module."""
    names = set(globals())
    assert {e.test for e in EXPLANATIONS.values()} <= names


# ---- the committed full-size figures ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    if not RESULTS.is_file():
        pytest.fail(f"{RESULTS} is missing: run python benchmarks/peers.py")
    return json.loads(RESULTS.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def full_terms(T: Any, committed: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Each committed model built at full size on the meta device from its registry entry, measured."""
    from archzoo.registry import load_registry

    registry = load_registry()
    out = {}
    for name, result in committed["models"].items():
        reference = registry.get_model(result["id"]).spec.reference
        assert reference is not None and reference.config_class is not None
        model = build(T, reference.target.split(".")[1], reference.config_class.split(".")[1], reference.kwargs, "meta")
        inputs = inputs_of(model, result["n"])
        out[name] = measure(model, inputs)
        out[name]["torchinfo_mult_adds"] = torchinfo_mult_adds(model, inputs)
        leaves = [m for m in model.modules() if not list(m.children())]
        out[name]["leaf_params"] = sum(p.numel() for m in leaves for p in m.parameters(recurse=False))
    return out


def test_deepspeed_matches_calflops_rules(committed: dict[str, Any], full_terms: dict[str, dict[str, int]]) -> None:
    """DeepSpeed's profiler (not in the dev extra: an sdist built at install) on the committed figures:
    calflops' rules, at full size, and the same figures as calflops."""
    for name, result in committed["models"].items():
        tools = result["tools"]
        deepspeed = {f["label"]: f["value"] for f in tools["deepspeed"]["figures"]}
        calflops = {f["label"]: f["value"] for f in tools["calflops"]["figures"]}
        assert deepspeed == calflops, name
        assert deepspeed["flops"] == calflops_flops(full_terms[name]), name
        assert deepspeed["macs"] == full_terms[name]["flops"] // 2, name


def test_committed_figures_follow_the_rules(committed: dict[str, Any], full_terms: dict[str, dict[str, int]]) -> None:
    """Every committed figure a rule covers, at full size; and FlopCounterMode's own run, exact."""
    checked = 0
    for name, result in committed["models"].items():
        terms = full_terms[name]
        for tool, run in result["tools"].items():
            for figure in run.get("figures", []):
                rule = RULES.get((tool, figure["label"]))
                if rule is not None:
                    assert figure["value"] == rule(terms), (name, tool, figure["label"])
                    checked += 1
        flop_counter = {f["quantity"]: f["value"] for f in result["tools"]["flop_counter"]["figures"]}
        assert flop_counter == {"params": terms["params"], "flops": terms["flops"]}, name
    assert checked >= 12 * len(committed["models"])


def test_committed_figures_are_archzoo_s_exact_figures(
    committed: dict[str, Any], full_terms: dict[str, dict[str, int]]
) -> None:
    for name, result in committed["models"].items():
        archzoo = {f["quantity"]: f["value"] for f in result["tools"]["archzoo"]["figures"]}
        assert (archzoo["params"], archzoo["flops"]) == (full_terms[name]["params"], full_terms[name]["flops"])


# ---- the page ---------------------------------------------------------------------------------------------

SAMPLE: dict[str, Any] = {
    "versions": {"torch": "2.13.0", "fvcore": "0.1.5"},
    "machine": "x86_64, 2 CPUs, Linux",
    "models": {
        "bert": {
            "id": "bert-base-uncased",
            "model": "transformers.BertModel",
            "n": 128,
            "tools": {
                "archzoo": {
                    "figures": [
                        {"label": "params.total", "quantity": "params", "value": 1000},
                        {"label": "flops.forward", "quantity": "flops", "value": 4000},
                    ],
                    "wall_seconds": 0.3,
                    "peak_rss_mib": 33.0,
                },
                "fvcore": {
                    "figures": [
                        {"label": "parameter_count()['']", "quantity": "params", "value": 1000},
                        {"label": "FlopCountAnalysis.total()", "quantity": "macs", "value": 2010},
                    ],
                    "tool_seconds": 1.5,
                    "wall_seconds": 4.75,
                    "peak_rss_mib": 900.0,
                },
                "thop": {"error": "ValueError: boom | pipe", "wall_seconds": 2.0},
                "mystery": {
                    "figures": [{"label": "size", "quantity": "params", "value": 999}],
                    "wall_seconds": 9.0,
                },
            },
        }
    },
}


def test_page_shows_each_figure_its_ratio_time_and_memory() -> None:
    page = peers_page(SAMPLE)
    assert page.startswith("# Peer tools, side by side\n")
    assert "## bert-base-uncased" in page
    rows = [line for line in page.splitlines() if line.startswith("| fvcore") or "FlopCountAnalysis.total()" in line]
    assert "| 2,010 | 0.5025 |" in rows[1]  # MACs over the exact FLOPs
    assert "4.75 s (1.50 s in the call)" in rows[0] and "900 MiB" in rows[0]  # once per process
    assert "| 1,000 | 1 (exact) |" in page
    assert "fails: ValueError: boom \\| pipe" in page  # a table cell cannot hold a bare pipe
    assert "Versions: fvcore 0.1.5, torch 2.13.0." in page
    assert "Checked by `tests/test_peers.py::test_fvcore_is_macs_plus_layer_norms`." in page  # no link: no address
    assert "](" not in page


def test_page_shows_markup_in_a_tool_s_message_as_written() -> None:
    """fvcore's error names a Python type (``<class 'dict'>``): the page shows it, not an HTML tag."""
    sample = json.loads(json.dumps(SAMPLE))
    sample["models"]["bert"]["tools"]["thop"]["error"] = "TypeError: <class 'dict'> & <script>x</script>"
    page = peers_page(sample)
    assert "fails: TypeError: &lt;class 'dict'&gt; &amp; &lt;script&gt;x&lt;/script&gt;" in page
    assert "<script>" not in page and "<class" not in page


def test_page_explains_each_difference_with_its_test() -> None:
    page = peers_page(SAMPLE, test_link="https://example.org/tests/test_peers.py")
    why = page.split("### Why they differ", 1)[1]
    fvcore = EXPLANATIONS[("fvcore", "macs")]
    assert f"[`{fvcore.test}`](https://example.org/tests/test_peers.py)" in why
    assert "mystery" in why and "not explained yet" in why  # a difference no rule covers says so
    assert "parameter_count" not in why  # equal figures need no explanation
    assert "took 0.30 s" in page and "fvcore `FlopCountAnalysis`, took 4.75 s" in page


def test_page_of_the_committed_results(committed: dict[str, Any]) -> None:
    """Every difference in the committed figures has an explanation."""
    page = peers_page(committed)
    assert "not explained yet" not in page
    for result in committed["models"].values():
        assert f"## {result['id']}" in page
