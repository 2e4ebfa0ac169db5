"""What transformers' Llama, Qwen3, OLMo 2, Granite and mixture-of-experts classes save for backward in a training
step: the llama plugin's activation formulas (the plugin's ``__init__`` imports its hook), each measured against
autograd (tests/test_memory.py for Llama, tests/test_activation_llama_family.py for the others).

Qwen3, OLMo 2 and Granite save what Llama's layers save, and:

* Qwen3 norms every query and key head with an RMSNorm of width ``d_h`` (QK-norm): each saves what a layer's RMSNorm
  saves, per head (an fp32 copy of its input, ``1/rms`` per token and head, the normalised tensor in the dtype).
* OLMo 2's RMSNorm multiplies by its weight in fp32 before casting back, so each of its norms (the two after
  attention and the feed-forward, the final one, and QK-norm over the whole query and key projections) saves an
  fp32 copy of its input, ``1/rms`` per token and the fp32 normalised tensor; its rotary tables are fp32.
* Granite's four multipliers (embeddings, residual branches, attention scores, logits) multiply by Python numbers:
  autograd saves nothing for them, so Granite saves what Llama does.

The gated feed-forward saves what its activation keeps of the gate's output (silu and gelu their input, gelu_new and
quick_gelu their Python intermediates, relu and tanh their output, which the product reads too), the product's two
factors and the down projection's input. Under SDPA (``fused``) a layer that masks by a sliding window is given its
mask from ``N = W`` on, which it saves (``N²`` in the dtype), with the keys and values repeated to every query head;
elsewhere SDPA takes grouped keys and values at their own width (heads up to 256 wide). The heads save their input
(the final norm's output) and: sequence classification the index of the pooled token (the batch's ``arange``, one
int64; the reference has no padding id), token classification its dropout mask (``p = 0.1``, which none of these
configuration classes lets a key set to 0).

The mixtures of experts (Mixtral, Qwen2-MoE, Qwen3-MoE: `MOE_SAVES`) save a router's input, scores and choices and,
for each of the k experts a token reaches, tensors as long as that expert's tokens: ``N k`` tokens' worth in all,
whatever the router picks. Qwen2-MoE's and Qwen3-MoE's routers renormalise the chosen weights where
``norm_topk_prob`` says (the configuration carries it). Mixtral's jitter noise and the auxiliary loss
``output_router_logits`` computes save more, which the formula does not state: they are refused naming the key.
"""

from __future__ import annotations

from archzoo.blocks import Block
from archzoo.decoder_saves import (
    activation_elements,
    attention_width_gap,
    head_width,
    kv_heads_of,
    pooled_index,
    repeat_kv_qkv,
)
from archzoo.formula import N, Poly, const, total
from archzoo.saved_tensors import (
    NORM_KINDS,
    ActivationSaves,
    GapTerm,
    SavedTerms,
    UnsupportedActivationMemory,
    activation_memory_hook,
    fp32_softmax_gap,
    symbol_of,
)

__all__ = ["DENSE_SAVES", "GATE_SAVES", "MOE_SAVES", "SAVES", "register_activation_memory"]


# ---- Llama, Qwen3, OLMo 2 and Granite -----------------------------------------------------------------------

#: what the activations the core's table lacks keep of the gate's output in the gated feed-forward: relu and tanh
#: their output, which the product reads too (one tensor for both, so none beyond it), quick_gelu (x · sigmoid(1.702
#: x), in Python) its input and the sigmoid's output
GATE_SAVES = {"relu": 0, "tanh": 0, "quick_gelu": 2}

#: SDPA's grouped-query path (transformers' use_gqa_in_sdpa) takes heads up to this wide
_GQA_WIDEST_HEAD = 256


def _olmo2(terms: SavedTerms) -> bool:
    """OLMo 2's classes: the only ones that norm the whole query and key projections (the plugin builds no other
    class for that configuration)."""
    return bool(terms.config.qk_norm == "whole")


def _rms_norm(terms: SavedTerms, elements: Poly, rows: Poly) -> Poly:
    """One RMSNorm over ``elements`` in ``rows`` rows: its input in fp32 (a copy in 16 bits, the input itself in
    fp32), 1/rms per row in fp32, and the normalised tensor the weight multiplies: back in the dtype (Llama's, Qwen3's
    and Granite's norm), or in fp32 (OLMo 2's multiplies by its weight before casting back)."""
    normalised = terms.fp32 if _olmo2(terms) else terms.b
    return terms.fp32 * elements + terms.fp32 * rows + normalised * elements


def _dense_norm(terms: SavedTerms) -> Poly:
    return _rms_norm(terms, terms.Nd, N)


def _qk_norms(terms: SavedTerms) -> dict[str, Poly]:
    """The query and key norms' saves: Qwen3's RMSNorm(d_h) on every head (a row per token and head), OLMo 2's over
    the whole projections (a row per token)."""
    qk_norm = terms.config.qk_norm
    if qk_norm == "none":
        return {}
    d_h = head_width(terms)
    out = {}
    for name, heads in (("q_norm", terms.h), ("k_norm", kv_heads_of(terms))):
        rows = N * heads if qk_norm == "per_head" else N
        out[name] = _rms_norm(terms, N * heads * d_h, rows)
    return out


def _sdpa_extra(terms: SavedTerms, sliding: bool) -> Poly:
    """What SDPA saves in one layer of the kind ``sliding`` beyond q, k and v at their own widths and the log-sum-exp:
    from ``N = W`` on, a sliding layer is given its mask, which it saves (``N²`` in the dtype), and then (or with
    heads wider than 256) SDPA's grouped-query path is not taken: the keys and values are repeated to every query head,
    except for one query token, whose heads transformers packs onto the key/value heads. ``terms.seq_len`` is the N
    the formula is asked at."""
    masked = sliding and terms.seq_len >= terms.config.sliding_window
    mask = terms.b * N**2 if masked else const(0)
    grouped = not masked and head_width(terms).evaluate() <= _GQA_WIDEST_HEAD
    if grouped or terms.seq_len == 1:
        return mask
    return mask + terms.b * (repeat_kv_qkv(terms) - terms.Ni - 2 * N * terms.kv)


def _layer_slides(terms: SavedTerms) -> bool:
    """Whether ``terms``' layer masks by the sliding window: its run's kind in a stack of sliding-window and global
    layers (``sliding_layer``, ``global_moe_layer``...), else every layer's in a stack whose layers mask alike."""
    kind = terms.layer.name.partition("_")[0]
    if kind in ("sliding", "global"):
        return kind == "sliding"
    return terms.config.layer_kinds().first_slides


def _dense_layer(terms: SavedTerms) -> dict[str, Poly]:
    """Mapped to the projections: each linear's input where it is first saved; the attention with its QK-norms."""
    b, Nd, Ni, Nf = terms.b, terms.Nd, terms.Ni, terms.Nf
    attention, mlp = terms.attention_block.name, terms.ff.name
    core = terms.attention_saves(upcast=True, eager_qkv=repeat_kv_qkv(terms))
    if terms.attention == "fused":
        core = core + _sdpa_extra(terms, _layer_slides(terms))
    parts = {
        f"{attention}.q_proj": b * Nd,
        f"{attention}.k_proj": const(0),
        f"{attention}.v_proj": const(0),
        # SDPA's output is saved by SDPA first; eager attention's is copied for the projection
        f"{attention}.out_proj": b * Ni if terms.attention == "eager" else const(0),
        f"{mlp}.fc_gate": b * Nd,
        f"{mlp}.fc_in": const(0),
        f"{mlp}.fc_out": b * Nf,
        # what the activation keeps of the gate's output, the product's two factors, the down projection's input
        mlp: b * Nd + (terms.activation_elements + 3) * b * Nf,
    }
    for name, norm in _qk_norms(terms).items():
        parts[f"{attention}.{name}"] = norm
        core = core + norm
    parts[attention] = core
    return parts


def _rotary_tables(terms: SavedTerms) -> Poly:
    """The rotary cos and sin tables, a head wide, every layer multiplies by: in the dtype, OLMo 2's in fp32 (its
    rotary embedding does not cast them); recomputed layers take them as arguments, not saved."""
    if terms.recompute:
        return const(0)
    return 2 * (terms.fp32 if _olmo2(terms) else terms.b) * N * head_width(terms)


def _stack_saves(terms: SavedTerms) -> Poly:
    """The rotary tables every layer multiplies by (each run of a stack of both kinds saves its own mask, `_sdpa_extra`)."""
    return _rotary_tables(terms)


def _dense_outside(terms: SavedTerms) -> dict[str, Poly]:
    """The token ids and the head's input, and what the head classes save in the model's own forward: sequence
    classification the index of the pooled token (torch.arange over the batch of 1; without a padding id the last
    token is -1, a Python number; with one, the configuration's pad_token_id, an argmax finds it), token
    classification its dropout's mask (in the dtype; GenericForTokenClassification's p = 0.1, as none of these
    configuration classes declares classifier_dropout or hidden_dropout)."""
    head = terms.config.head
    parts = {
        "token": terms.token_ids,
        "lm_head": terms.b * terms.Nd,
        "score": terms.b * terms.Nd,
        "qa_outputs": terms.b * terms.Nd,
    }
    if head == "sequence_classification":
        # with a padding id, the last non-padding token's index is an argmax, a one-element int64 tensor saved too
        parts[""] = pooled_index(terms)
    elif head == "token_classification":
        parts[""] = terms.b * terms.Nd
    return parts


def _dense_check(terms: SavedTerms) -> None:
    """Refuse what the formula does not state: a norm of the layer that is not an RMSNorm (OLMo's parameterless
    LayerNorm, which these classes never build)."""
    if any(c.kind != "rms_norm" for c in terms.layer.children if c.kind in NORM_KINDS):
        raise UnsupportedActivationMemory(
            f"{terms.root.name}: the formula states what an RMSNorm saves; this layer's norms are "
            f"{', '.join(sorted({c.kind for c in terms.layer.children if c.kind in NORM_KINDS}))}"
        )


def _checked_layer(terms: SavedTerms) -> dict[str, Poly]:
    _dense_check(terms)
    return _dense_layer(terms)


def _dense_gap(terms: SavedTerms) -> list[GapTerm | None]:
    Nd = terms.Nd
    norms = sum(1 for c in terms.layer.children if c.kind in NORM_KINDS)
    olmo2 = _olmo2(terms)
    gaps: list[GapTerm | None] = [
        GapTerm(
            "RMSNorm in fp32",
            norms * _dense_norm(terms) - 2 * 2 * Nd,
            (
                "OLMo 2's RMSNorm saves an fp32 copy of its input, 1/rms per token and the fp32 normalised tensor "
                "its weight multiplies before the cast back"
                if olmo2
                else "the RMSNorm upcasts its input to fp32 (a 4-byte copy) and saves 1/rms per token in fp32, "
                "besides the 2-byte normalised tensor"
            )
            + ", where Korthikanti counts two LayerNorms' 2-byte inputs",
        ),
        attention_width_gap(terms, repeat_kv_qkv(terms)),
        fp32_softmax_gap(terms),
        GapTerm(
            "gated feed-forward",
            2 * (terms.activation_elements + 3) * terms.Nf - 16 * Nd,
            f"the gated feed-forward saves {terms.activation_elements} d_ff-wide tensor(s) its activation keeps "
            "besides its output, the activation's and the up projection's outputs and their product (2 bytes each; "
            "an activation that keeps its output shares it with the product), where Korthikanti's MLP saves the "
            "GeLU's input and output, 4h wide (16 s b h)",
        ),
    ]
    qk = _qk_norms(terms)
    if qk:
        gaps.append(
            GapTerm(
                "QK-norm",
                total(qk.values()),
                (
                    "OLMo 2's RMSNorms over the whole query and key projections save fp32 copies of the queries and "
                    "keys, 1/rms per token and the fp32 normalised tensors"
                    if olmo2
                    else "Qwen3's RMSNorm on every query and key head saves fp32 copies of the queries and keys, "
                    "1/rms per token and head and the normalised tensors"
                )
                + ", which Korthikanti's layer lacks",
            )
        )
    if terms.config.n_layers == 1:  # the one layer's rotary table is its own (the stack's are no layer's)
        gaps.append(
            GapTerm(
                "a rotary table of its own",
                _rotary_tables(terms),
                "the only layer's rotary cos and sin tables are saved with it, where Korthikanti's layer has no "
                "position table",
            )
        )
    return gaps


def _dense_classes(prefix: str, heads: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"transformers.{prefix}{suffix}" for suffix in heads)


_ALL_HEAD_CLASSES = (
    "Model",
    "ForCausalLM",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
)


def _dense_saves(architecture: str, classes: tuple[str, ...]) -> ActivationSaves:
    return ActivationSaves(
        architecture=architecture,
        classes=classes,
        activations=GATE_SAVES,
        layer=_checked_layer,
        outside=_dense_outside,
        gap=_dense_gap,
        norm=_dense_norm,
        stack=_stack_saves,
    )


#: Llama's classes, measured with transformers 5.23 and torch 2.13 (tests/test_memory.py, and every head class and
#: gate activation in tests/test_activation_llama_family.py)
SAVES = _dense_saves("llama", _dense_classes("Llama", _ALL_HEAD_CLASSES))

#: Llama's classes, which build what a type's own cannot (a head Granite or OLMo 2 lacks, Qwen3 without QK-norm)
_LLAMA_CLASSES = _dense_classes("Llama", _ALL_HEAD_CLASSES)

#: measured with transformers 5.23 and torch 2.13 (tests/test_activation_llama_family.py): every head class each
#: model type has in transformers 5.23, and Llama's where the plugin's reference falls back to them
DENSE_SAVES = (
    _dense_saves("qwen3", _dense_classes("Qwen3", _ALL_HEAD_CLASSES) + _LLAMA_CLASSES),
    _dense_saves(
        "olmo2", _dense_classes("Olmo2", ("Model", "ForCausalLM", "ForSequenceClassification")) + _LLAMA_CLASSES
    ),
    _dense_saves("granite", _dense_classes("Granite", ("Model", "ForCausalLM")) + _LLAMA_CLASSES),
)


# ---- mixtures of experts ------------------------------------------------------------------------------------


def _mixture_block(terms: SavedTerms) -> Block | None:
    """The layer's mixture of experts (None in a dense layer of a stack of runs)."""
    return next((c for c in terms.layer.children if c.kind == "mixture_of_experts"), None)


def _moe_family(terms: SavedTerms) -> str:
    """The transformers family whose classes build the mixture: Qwen2-MoE's alone have a shared expert, Qwen3-MoE's
    alone norm each query and key head, Mixtral's have neither (the plugin's builder rules)."""
    cfg = terms.config
    if getattr(cfg, "d_ff_shared", 0):
        return "qwen2_moe"
    return "qwen3_moe" if cfg.qk_norm == "per_head" else "mixtral"


def _check_router(terms: SavedTerms) -> None:
    """Refuse a router whose saves the formula does not state: Mixtral's jitter noise in training (a random factor
    on the router's input) and the auxiliary loss output_router_logits computes in the forward pass, each of which
    saves more (a small Mixtral at N = 9: 1,152 and 528 bytes)."""
    cfg = terms.config
    if getattr(cfg, "router_jitter_noise", 0.0) or getattr(cfg, "output_router_logits", False):
        key = "router_jitter_noise" if getattr(cfg, "router_jitter_noise", 0.0) else "output_router_logits"
        raise UnsupportedActivationMemory(
            f"{terms.root.name}: {key} makes the router save tensors the formula does not state (the jitter's "
            "random factors, the auxiliary loss's probabilities); measure it with archzoo.memory.measure_activations"
        )


def _renormalised(terms: SavedTerms) -> bool:
    """Whether the router renormalises its top-k weights to sum to one: Mixtral's always; Qwen2-MoE's and Qwen3-MoE's
    as ``norm_topk_prob`` says (their classes' default False; Qwen3-30B-A3B's config.json True), refused where the
    configuration does not carry it, since the division saves its denominator and the weights."""
    if _moe_family(terms) == "mixtral":
        return True
    norm_topk_prob = getattr(terms.config, "norm_topk_prob", None)
    if norm_topk_prob is None:
        raise UnsupportedActivationMemory(
            f"{terms.root.name}: the router of transformers' {_moe_family(terms)} classes saves the denominator and "
            "the renormalised weights where norm_topk_prob is true, and the configuration does not carry "
            "norm_topk_prob: measure it with archzoo.memory.measure_activations"
        )
    return bool(norm_topk_prob)


def _routing_weight(terms: SavedTerms) -> Poly:
    """The bytes of one routing weight: fp32 in Mixtral (its router keeps the softmax's dtype), the dtype in Qwen2-MoE
    and Qwen3-MoE (their routers cast the weights to the scores' dtype)."""
    return terms.fp32 if _moe_family(terms) == "mixtral" else terms.b


def _router(terms: SavedTerms) -> Poly:
    """The router: its input (the norm's output, in the dtype; Qwen2-MoE's shared expert saves it first), the fp32
    softmax of its scores, the int64 indices of the top k and, where it renormalises them, the fp32 denominator (one a
    token) and the k fp32 weights the in-place division saves."""
    _check_router(terms)
    cfg = terms.config
    E = symbol_of(terms.root, "E", cfg.n_experts)
    k = symbol_of(terms.root, "k", cfg.top_k)
    fp32 = terms.fp32
    own_input = const(0) if _moe_family(terms) == "qwen2_moe" else terms.b * terms.Nd
    saves = own_input + fp32 * N * E + terms.int64 * N * k
    if _renormalised(terms):
        saves = saves + fp32 * N + fp32 * N * k
    return saves


def _routed_experts(terms: SavedTerms) -> Poly:
    """The routed experts, summed over them: each runs on the tokens routed to it, and every tensor it saves is as long
    as its token count, so the sum is ``N k`` tokens' worth (each token reaches k distinct experts), whatever the
    router picks. A token's: two int64 positions (its index and its rank among its k, one storage), the gathered
    input, the gate and up projections' output (one storage, 2 d_e, of which the activation and the product read
    views), what the activation keeps beyond its input, its output and the product (d_e each), the down projection's
    output, the weighted output index_add_ saves (d each) and its routing weight."""
    cfg, b = terms.config, terms.b
    d_e = symbol_of(terms.root, "d_e", cfg.d_ff_expert)
    k = symbol_of(terms.root, "k", cfg.top_k)
    # what the activation keeps beyond the view of the gate/up storage it reads (saved whole): the configuration's
    # activation, as the expert, not the layer, names it
    kept = max(activation_elements(terms, terms.root.name) - 1, 0)
    return N * k * (2 * terms.int64 + _routing_weight(terms) + 3 * b * terms.d + (4 + kept) * b * d_e)


def _shared_expert(terms: SavedTerms) -> Poly:
    """Qwen2-MoE's shared expert, run first: the norm's output (its gate and up projections' input, which the router
    and its sigmoid gate read too), a gated feed-forward ``d_s`` wide; the sigmoid's output and the shared expert's
    output the product saves are the mixture's own (no block's)."""
    d_s = symbol_of(terms.root, "d_s", terms.config.d_ff_shared)
    elements = activation_elements(terms, terms.root.name)
    return terms.b * terms.Nd + (elements + 3) * terms.b * N * d_s


def _moe_layer(terms: SavedTerms) -> dict[str, Poly]:
    """A dense layer's saves (`_dense_layer`), the feed-forward replaced by the mixture's router, experts and, in
    Qwen2-MoE, its shared expert, its gate's sigmoid output and the shared expert's output the product saves."""
    parts = _dense_layer(terms)
    mixture = _mixture_block(terms)
    if mixture is None:
        return parts
    # the layer's feed-forward as the core reads it (the mixture's expert, or the layer itself) is the mixture's
    ff = terms.ff.name
    parts = {path: poly for path, poly in parts.items() if path != ff and not path.startswith(f"{ff}.")}
    router, experts = _router(terms), _routed_experts(terms)
    parts[f"{mixture.name}.gate"] = router
    parts[f"{mixture.name}.experts"] = experts
    whole = router + experts
    if _moe_family(terms) == "qwen2_moe":
        shared = _shared_expert(terms)
        parts[f"{mixture.name}.shared"] = shared
        whole = whole + shared + terms.b * N + terms.b * terms.Nd
    parts[mixture.name] = whole
    return parts


def _moe_gap(terms: SavedTerms) -> list[GapTerm | None]:
    """`_dense_gap`, the gated feed-forward's term replaced by the mixture's against Korthikanti's MLP."""
    mixture = _mixture_block(terms)
    gaps = _dense_gap(terms)
    if mixture is None:
        return gaps
    parts = _moe_layer(terms)
    return [g for g in gaps if g is None or g.name != "gated feed-forward"] + [
        GapTerm(
            "mixture of experts",
            parts[mixture.name] - 18 * terms.Nd,
            "the router saves its input, its fp32 softmax, the int64 indices of its top k, the fp32 denominator and "
            "weights of their renormalisation; each of the k experts a token reaches saves the token's gathered "
            "input, its gate and up outputs, activation, product, down output and weighted output, its fp32 routing "
            "weight and two int64 positions; Korthikanti's MLP saves its input and the GeLU's input and output, 4h "
            "wide (18 s b h)",
        )
    ]


def _moe_saves(architecture: str, families: tuple[str, ...]) -> ActivationSaves:
    return ActivationSaves(
        architecture=architecture,
        classes=tuple(c for family in families for c in _dense_classes(family, _ALL_HEAD_CLASSES)),
        activations=GATE_SAVES,
        layer=_moe_layer,
        outside=_dense_outside,
        gap=_moe_gap,
        norm=_dense_norm,
        stack=_stack_saves,
    )


#: Mixtral's, Qwen2-MoE's and Qwen3-MoE's classes (the moe architecture's, and Qwen3-MoE's as the qwen3 architecture
#: builds it with experts), measured with transformers 5.23 and torch 2.13 on the CPU (routing reads real weights):
#: exact against autograd in every mode and head class, for every routing, with each norm_topk_prob.
MOE_SAVES = (
    _moe_saves("moe", ("Mixtral", "Qwen2Moe", "Qwen3Moe")),
    _moe_saves("qwen3", ("Qwen3Moe",)),
)


register_activation_memory = activation_memory_hook(SAVES, *DENSE_SAVES, *MOE_SAVES)
