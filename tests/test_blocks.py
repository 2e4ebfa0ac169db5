"""Building blocks against the torch.nn modules they model (figures from torch, built on the meta device)."""

import pytest

from archzoo.blocks import (
    attention,
    composite,
    embedding,
    experts,
    feed_forward,
    layer_norm,
    learned_tensor,
    linear,
    lm_head,
    off_loss_path,
    patch_embedding,
    repeat,
    rms_norm,
    seq2seq_decoder,
    seq2seq_encoder,
)
from archzoo.formula import N, S, const, sym

d = sym("d", 512)


def test_linear_counts_weight_and_bias():
    # torch.nn.Linear(512, 2048): 512*2048 + 2048 = 1,050,624 parameters
    block = linear("fc", d, sym("d_ff", 2048))
    assert block.params.evaluate() == 1_050_624
    assert block.approx.evaluate() == 1_048_576
    assert block.flops.evaluate(N=10) == 2 * 10 * 512 * 2048


def test_tied_linear_counts_only_its_bias_but_costs_flops():
    block = linear("head", d, sym("V", 100), bias=False, tied_to="token")
    assert block.params.evaluate() == 0
    assert block.flops.evaluate(N=3) == 2 * 3 * 512 * 100


def test_torch_multihead_attention_512_8():
    # torch.nn.MultiheadAttention(512, 8): 1,050,624 parameters (torch 2.13, meta device)
    block = attention("mha", d, d)
    assert block.params.evaluate() == 1_050_624
    assert block.params.text() == "4·d² + 4·d"


def test_grouped_query_attention_shrinks_k_and_v():
    h, h_kv, d_h = sym("h", 8), sym("h_kv", 2), sym("d_h", 64)
    block = attention("gqa", d, h * d_h, kv_inner=h_kv * d_h, bias=False, causal=True)
    # q and out: 512*512 each; k and v: 512*128 each
    assert block.params.evaluate() == 2 * 512 * 512 + 2 * 512 * 128
    assert block.kv_cache.evaluate() == 2 * 128


def test_norms():
    # torch.nn.LayerNorm(512): 1,024; LayerNorm(512, bias=False): 512; torch.nn.RMSNorm(512): 512
    assert layer_norm("ln", d).params.evaluate() == 1024
    assert layer_norm("ln", d, bias=False).params.evaluate() == 512
    assert rms_norm("rms", d).params.evaluate() == 512


def test_gated_feed_forward_has_three_projections():
    block = feed_forward("ffn", d, sym("d_ff", 1376), activation="silu", gated=True, bias=False)
    assert block.params.evaluate() == 3 * 512 * 1376


def test_unknown_activation_is_refused():
    with pytest.raises(ValueError, match="unknown activation 'swiglu2'"):
        feed_forward("ffn", d, sym("d_ff", 8), activation="swiglu2")


def test_patch_embedding_matches_conv2d():
    # torch.nn.Conv2d(3, 768, 16, 16): 768*3*16*16 + 768 = 590,592 parameters
    dm = sym("d", 768)
    block = patch_embedding("patch", sym("C", 3), sym("p", 16), dm, sym("n_p", 196))
    assert block.params.evaluate() == 590_592
    assert block.flops.evaluate() == 2 * 196 * 3 * 16 * 16 * 768


def test_shared_repeat_counts_weights_once_and_flops_n_times():
    layer = linear("fc", d, d)
    L = sym("L", 12)
    shared = repeat(layer, L, shared=True)
    separate = repeat(layer, L)
    assert shared.params.evaluate() == layer.params.evaluate()
    assert separate.params.evaluate() == 12 * layer.params.evaluate()
    assert shared.flops.evaluate(N=4) == separate.flops.evaluate(N=4) == 12 * layer.flops.evaluate(N=4)


def test_embeddings_and_position_tables_are_embedding_params():
    tok = embedding("token", sym("V", 10), d, role="token")
    seg = embedding("segment", sym("T", 2), d, role="segment")
    pos = learned_tensor("position", sym("n", 5) * d, leading=True, role="position")
    cls = learned_tensor("cls", d, leading=False)
    assert tok.embedding_params.evaluate() == 5120
    assert seg.embedding_params.is_zero()
    assert pos.embedding_params.evaluate() == 2560
    assert cls.approx.is_zero() and cls.params.evaluate() == 512


def test_pooled_tokens_cost_one_row():
    block = linear("pooler", d, d, tokens=const(1))
    assert block.flops.free_symbols() == set()
    assert block.flops.evaluate() == 2 * 512 * 512


def test_visits_multiply_copies_down_the_tree():
    L = sym("L", 6)
    layer = feed_forward("ffn", d, sym("d_ff", 2048))
    for shared, stored in ((False, 6), (True, 1)):
        root = repeat(layer, L, name="layers", shared=shared)
        visits = {v.path: v for v in root.visits()}
        fc = visits["layers.ffn.fc_in"]
        assert (fc.stored.evaluate(), fc.executed.evaluate(), fc.active.evaluate()) == (stored, 6, stored)
        # torch.nn.Linear(512, 2048): 1,050,624 parameters
        assert fc.params_each.evaluate() == 1_050_624 and fc.params.evaluate() == stored * 1_050_624
        assert fc.flops.evaluate(N=3) == 6 * 2 * 3 * 512 * 2048
        assert list(visits) == ["layers", "layers.ffn", "layers.ffn.fc_in", "layers.ffn.fc_out"]  # pre-order


def test_cross_attention_caches_per_source_token():
    # torch.nn.MultiheadAttention(512, 8) as cross-attention: keys and values of 512 for each source token
    block = attention("cross", d, d, cross=True)
    assert block.cross_kv_cache.evaluate() == 2 * 512 and block.kv_cache.is_zero()
    assert repeat(block, sym("L", 6)).cross_kv_cache.evaluate() == 6 * 2 * 512


# ---- beyond one forward pass: backward, prefill, decode ---------------------------------------------------
# A linear layer's backward under autograd is two matmuls of its forward's size when its input needs a gradient
# (grad_input = grad_out W, grad_W = grad_outᵀ x), one when only the weight does; torch's convolution_backward
# likewise computes only the gradients asked for.


def test_backward_of_a_linear_layer_is_two_products_or_one():
    assert linear("fc", d, d).backward_flops.evaluate(N=7) == 2 * (2 * 7 * 512 * 512)
    assert linear("fc", d, d, input_grad=False).backward_flops.evaluate(N=7) == 2 * 7 * 512 * 512


def test_the_patch_convolution_computes_no_gradient_for_the_pixels():
    block = patch_embedding("patches", sym("C", 3), sym("p", 16), sym("d", 768), sym("n_p", 196))
    assert block.backward_flops.terms == block.flops.terms


def test_off_loss_path_zeroes_the_backward_of_a_whole_sub_tree_and_its_parents_sum_again():
    ff = feed_forward("ff", d, sym("d_ff", 64))
    model = composite("model", "model", [attention("attn", d, d), off_loss_path(repeat(ff, sym("L", 3), name="ffs"))])
    assert model.children[1].backward_flops.is_zero()
    assert all(b.backward_flops.is_zero() for _, _, b in model.children[1].walk())
    assert model.backward_flops.terms == model.children[0].backward_flops.terms
    forward = model.children[0].flops + 3 * ff.flops  # the forward pass still runs it
    assert model.flops.evaluate(N=5) == forward.evaluate(N=5)


def test_the_walk_sums_to_the_root_in_every_phase():
    layer = composite("layer", "layer", [attention("attn", d, d, causal=True), feed_forward("ff", d, sym("d_ff", 64))])
    moe = experts(
        feed_forward("expert", d, sym("d_e", 32)), sym("E", 4), sym("k", 2), router=linear("gate", d, sym("E", 4))
    )
    root = composite("model", "model", [repeat(layer, sym("L", 2), name="layers"), moe, lm_head(d, sym("V", 10))])
    leaves = [v for v in root.visits() if not v.block.children]
    for phase in ("flops", "backward_flops", "prefill_flops", "decode_flops"):
        assert sum(getattr(v, phase).evaluate(N=5, S=3) for v in leaves) == getattr(root, phase).evaluate(N=5, S=3)


def test_prefill_computes_one_row_of_logits_and_decode_one_token_over_n_keys():
    head = lm_head(d, sym("V", 100))
    assert head.prefill_flops.evaluate(N=9) == head.decode_flops.evaluate(N=9) == 2 * 512 * 100
    attn = attention("attn", d, d, causal=True)
    core = next(c for c in attn.children if c.kind == "attention_core")
    assert core.prefill_flops.terms == core.flops.terms
    assert core.decode_flops.evaluate(N=9) == 2 * 9 * 512 + 2 * 9 * 512  # Q Kᵀ and A V for one query
    assert attn.decode_flops.evaluate(N=9) == 4 * 2 * 512 * 512 + 4 * 9 * 512


def test_cross_attention_decodes_over_s_cached_source_tokens_and_projects_them_in_prefill():
    cross = seq2seq_decoder(attention("cross", d, d, cross=True))
    by_name = {c.name: c for c in cross.children}
    assert by_name["k_proj"].decode_flops.is_zero() and by_name["v_proj"].decode_flops.is_zero()
    assert by_name["scores"].decode_flops.evaluate(N=4, S=11) == 4 * 11 * 512
    # prefill: one start token's query over N source keys; the source's keys and values projected once
    assert by_name["scores"].prefill_flops.evaluate(N=11) == 4 * 11 * 512
    assert by_name["k_proj"].prefill_flops.evaluate(N=11) == 2 * 11 * 512 * 512
    assert by_name["q_proj"].prefill_flops.evaluate(N=11) == 2 * 512 * 512


def test_an_encoder_runs_in_prefill_only():
    encoder = seq2seq_encoder(repeat(feed_forward("ff", d, sym("d_ff", 64)), sym("L_e", 2), name="layers"))
    assert encoder.decode_flops.is_zero() and encoder.prefill_flops.terms == encoder.flops.terms


def test_substitute_replaces_a_symbol_by_a_number_or_a_formula():
    poly = 3 * N * N * d + 2 * N + 7
    assert poly.substitute("N", 1).evaluate() == 3 * 512 + 2 + 7
    assert poly.substitute("N", S).evaluate(S=4) == poly.evaluate(N=4)
    assert "N" not in poly.substitute("N", 2).free_symbols()


# ---- the shape a reader needs: heads, activation, input width as fields of the block ------------------------


def test_attention_records_its_heads_and_refuses_heads_that_do_not_make_its_width():
    # torch.nn.MultiheadAttention(512, 8): 8 heads of 64; grouped query: 2 key/value heads of 64 make 128
    h, h_kv, d_h = sym("h", 8), sym("h_kv", 2), sym("d_h", 64)
    block = attention("gqa", d, h * d_h, kv_inner=h_kv * d_h, causal=True, heads=h, kv_heads=h_kv, d_head=d_h)
    assert (block.heads, block.kv_heads, block.d_head) == (h, h_kv, d_h)
    plain = attention("mha", d, d, heads=h, d_head=d_h)
    assert plain.kv_heads == h  # one key/value head per query head unless told otherwise
    assert attention("mha", d, d).heads is None  # a caller that does not say leaves it unknown
    with pytest.raises(ValueError, match=r"^attention 'bad': heads 8 of width 32 do not make the projection width 512"):
        attention("bad", d, d, heads=h, d_head=sym("d_h", 32))


def test_feed_forward_and_linear_record_their_activation_and_input_width():
    ff = feed_forward("ffn", d, sym("d_ff", 1376), activation="silu", gated=True, bias=False)
    assert (ff.activation, ff.gated) == ("silu", True)
    assert (feed_forward("ffn", d, sym("d_ff", 8)).activation, feed_forward("ffn", d, sym("d_ff", 8)).gated) == (
        "gelu",
        False,
    )
    assert linear("fc", sym("d_ff", 1376), d).d_in == sym("d_ff", 1376)


def test_qk_norms_add_their_parameters_and_no_flops():
    # transformers 5.23 Qwen3Attention(hidden 512, 8 heads of 64): q_norm and k_norm are RMSNorm(64), 64 each
    h, d_h = sym("h", 8), sym("d_h", 64)
    plain = attention("attn", d, h * d_h, heads=h, d_head=d_h, bias=False)
    normed = attention(
        "attn",
        d,
        h * d_h,
        heads=h,
        d_head=d_h,
        bias=False,
        q_norm=rms_norm("q_norm", d_h),
        k_norm=rms_norm("k_norm", d_h),
    )
    assert normed.params.evaluate() - plain.params.evaluate() == 2 * 64
    assert normed.flops.terms == plain.flops.terms
    assert [c.name for c in normed.children] == ["q_proj", "k_proj", "v_proj", "q_norm", "k_norm", "scores", "out_proj"]


def test_blocks_made_without_the_dataclass_init_are_the_dataclass_s_blocks():
    """The helpers build blocks (and copies with fields changed) without ``Block.__init__``, for speed: each
    must be the very block ``Block(**fields)`` and ``dataclasses.replace`` make, its fields in their order."""
    from dataclasses import fields, replace

    from archzoo.blocks import Block, with_modules

    h = sym("h", 8)
    layer = composite(
        "layer",
        "layer",
        [attention("attention", d, d, heads=h, d_head=sym("d_h", 64), causal=True), layer_norm("norm", d)],
    )
    tree = with_modules(
        composite("model", "model", [embedding("tokens", sym("V", 100), d, role="token"), repeat(layer, sym("L", 2))]),
        {"model.tokens": ("wte",), "model.layer.layer.attention": ("attn",)},
    )
    for _, _, block in tree.walk():
        rebuilt = Block(**{f.name: getattr(block, f.name) for f in fields(Block)})
        assert block == rebuilt and list(vars(block)) == list(vars(rebuilt))
        assert replace(block, name="x") == replace(rebuilt, name="x")
    assert [b.modules for _, _, b in tree.walk()][:3] == [(), ("wte",), ()]
    assert tree.children[1].children[0].children[0].modules == ("attn",)
    # a block with nothing mapped in it or below is kept as it was built
    plain = rms_norm("norm", d)
    assert with_modules(composite("m", "model", [plain]), {}).children[0] is plain
