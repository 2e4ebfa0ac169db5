"""Decode steps past a sliding window, against FlopCounterMode on transformers' own cache.

transformers' ``DynamicSlidingWindowLayer`` keeps the last ``W - 1`` tokens of a layer that masks by a window of
``W`` and hands the step reading a new token ``W`` keys: past the window that step's attention products read ``W``
keys, not ``N``. A block with ``window`` set says so (`archzoo.decoder_parts.windowed`), and the report's decode
formula reads ``W`` there (`archzoo.report.Report.decode_formula`). Gemma's and the llama plugin's windows are
checked in their own modules; this one checks StarCoder2's, and the core's bookkeeping on a hand-built tree.
"""

from __future__ import annotations

import json

import pytest

from archzoo.blocks import composite, repeat, windows
from archzoo.decoder_parts import causal_attention, windowed
from archzoo.formula import const
from archzoo.report import make_report
from archzoo.symbols import symbol

#: a small StarCoder2 with a window of 5 tokens on every layer
_STARCODER2 = dict(vocab_size=61, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=24, sliding_window=5)


@pytest.mark.reference
@pytest.mark.parametrize("n", [3, 5, 6, 11])
def test_starcoder2_decode_on_both_sides_of_the_window(host, n):
    """StarCoder2's decode step equals FlopCounterMode's on transformers' Starcoder2ForCausalLM with its own cache,
    within the window and past it; before, archzoo ignored ``sliding_window`` and counted N keys past it."""
    from archzoo.architecture import parse_config
    from archzoo.reference import reference_decode_flops

    architecture = host.architecture("starcoder2")
    cfg = parse_config(architecture, _STARCODER2)
    ref = architecture.reference(cfg)
    assert ref.kwargs["sliding_window"] == 5
    assert make_report(architecture, cfg, n).decode_flops == reference_decode_flops(ref, n)


@pytest.mark.reference
def test_the_cache_held_after_n_tokens_keeps_w_minus_1_in_a_windowed_layer(T, host):
    """What the memory report counts as the KV cache after a forward pass of N tokens
    (`archzoo.report.Report.kv_cache_elements_held`) is what transformers' DynamicCache holds: every token, up to
    W - 1 of them in a layer that masks by a window of W (StarCoder2 masks every layer). It once counted N tokens in
    every layer past the window."""
    import torch

    from archzoo.architecture import parse_config
    from archzoo.testing import build_model

    architecture = host.architecture("starcoder2")
    cfg = parse_config(architecture, _STARCODER2)
    ref = architecture.reference(cfg)
    model = build_model("Starcoder2ForCausalLM", T.Starcoder2Config(**ref.kwargs), device="cpu")
    for n in (3, 4, 5, 11):
        cache = T.DynamicCache(config=model.config)
        with torch.no_grad():
            model(input_ids=torch.zeros(1, n, dtype=torch.long), past_key_values=cache, use_cache=True)
        held = sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers)
        report = make_report(architecture, cfg, n)
        assert report.kv_cache_elements_held(n) == held, n
        assert held == report.kv_cache_elements_per_token * min(n, 4), n  # W - 1 = 4 tokens at most


def test_starcoder2_reads_the_window_from_a_config_json(host, tmp_path):
    """A released StarCoder2 file's ``sliding_window`` (4,096 in bigcode/starcoder2-7b's) is read; one under a token,
    which transformers' mask cannot be built for (its forward pass fails), is refused on one line."""
    from archzoo.errors import HFConfigError
    from archzoo.hf_config import load_hf_config

    base = dict(model_type="starcoder2", vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**base, "num_key_value_heads": 2, "sliding_window": 4096}))
    assert load_hf_config(path, host).config.sliding_window == 4096
    path.write_text(json.dumps({**base, "num_key_value_heads": 2, "sliding_window": 0}))
    with pytest.raises(HFConfigError, match="sliding_window"):
        load_hf_config(path, host)


def test_a_window_on_blocks_of_a_tree_changes_only_their_decode_past_it():
    """On a hand-built stack of 3 windowed layers (W = 4) over 2 plain ones: the decode formula is the tree's up to
    the window; past it the windowed layers' attention products read W keys: 4 h d_h (N - W) FLOPs fewer in each,
    the same difference in the whole report, its JSON and each enclosing block."""
    d, h, d_h = symbol("d", 16), symbol("h", 2), symbol("d_h", 8)

    def layer(name: str, window: int | None):
        attention = causal_attention(d, d, h, d_h, 2, 2, bias=False, details="")
        return composite(name, "decoder_layer", [windowed(attention, window)])

    root = composite(
        "model",
        "model",
        [
            repeat(layer("local", 4), const(3), name="locals"),
            repeat(layer("full", None), const(2), name="fulls"),
        ],
    )
    assert [v.path for v in windows(root)] == ["model.locals.local.attention"]

    from archzoo.report import Report

    plain = root.decode_flops
    for n, fewer in ((3, 0), (4, 0), (9, 3 * 4 * 2 * 8 * (9 - 4))):
        report = Report.__new__(Report)  # the decode formulas need only the report's tree
        object.__setattr__(report, "root", root)
        assert plain.evaluate(N=n) - report.decode_formula(n).evaluate(N=n) == fewer, n
        visits = {v.path: v for v in root.visits()}
        local = visits["model.locals"]
        assert local.decode_flops.evaluate(N=n) - report.decode_of(local, n).evaluate(N=n) == fewer, n
        assert report.decode_of(visits["model.fulls"], n) == visits["model.fulls"].decode_flops, n


def test_the_terminal_and_json_say_which_windows_the_decode_step_is_past(capsys):
    """``archzoo count gemma2`` at its 8,192-token context: the decode row names the 4,096-token window (Gemma2Config's
    sliding_window) its sliding layers read, and ``flops.decode_windows`` lists it; within the window neither does."""
    from archzoo.cli import main

    assert main(["count", "gemma2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["flops"]["decode_windows"] == [4096]
    assert main(["count", "gemma2", "--seq-len", "4096", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["flops"]["decode_windows"] == []
    assert main(["count", "gemma2"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("decode"))
    assert "its sliding-window layers read the last W = 4,096 keys" in row and "W" in row.split("=", 2)[-1], row
    assert main(["count", "llama"]) == 0  # no window: the row says nothing of one
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("decode"))
    assert "sliding-window" not in row, row
