"""Prefill and decode FLOPs, against FlopCounterMode on real cached calls, for every generative class.

The convention (methodology, "Training, prefill and decode"): prefill(N) is generation's first call, a
decoder over N prompt tokens computing the logits of the last position only (``logits_to_keep=1`` where the
class takes it), an encoder-decoder's encoder over N source tokens and its decoder over the one start token;
decode(N) is the step reading position N with N - 1 tokens cached (``past_key_values`` from a first call),
an encoder-decoder's cross-attention over S source tokens whose keys and values are cached. Then generating
M tokens costs prefill(P) + decode(P + 1) + ... + decode(P + M - 1), which ``generate`` itself confirms below.
Encoders have neither. Configurations are tests/test_hf_sweep.py's small bases.
"""

from __future__ import annotations

import json
import warnings

import pytest

import archzoo
from archzoo.hf_config import load_hf_config
from archzoo.report import NO_CACHE as CACHELESS
from archzoo.report import NOT_GENERATIVE, make_report
from test_hf_sweep import BASES, HOST, SEQ_LEN, TABLES

pytestmark = [pytest.mark.reference, pytest.mark.sweep]

#: causal classes of transformers 5.23 that keep no key/value cache (their output has no past_key_values):
#: archzoo gives the figures of a cached implementation of the same layers, verified on GPT-2's cached classes
NO_CACHE = {
    "GPT2ForTokenClassification",
    "GPT2ForQuestionAnswering",
    "OpenAIGPTModel",
    "OpenAIGPTLMHeadModel",
    "OpenAIGPTForSequenceClassification",
}


def _report(tmp_path, model_type: str, model_class: str):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, **BASES[model_type]}))
    reading = load_hf_config(path, HOST, hf_class=model_class)
    image = reading.architecture.name == "vit"
    report = make_report(reading.architecture, reading.config, None if image else SEQ_LEN)
    return report, reading.architecture.reference(reading.config)


def _cases() -> list:
    return [pytest.param(t, c, id=f"{t}-{c}") for t in sorted(TABLES) for c in TABLES[t].classes]


@pytest.mark.parametrize("model_type, model_class", _cases())
def test_prefill_and_decode_equal_flop_counter_mode(T, tmp_path, model_type, model_class):
    from archzoo.reference import build_reference, reference_decode_flops, reference_prefill_flops

    report, ref = _report(tmp_path, model_type, model_class)
    if not report.generative:
        note = report.generation_note
        assert note in (NOT_GENERATIVE, CACHELESS), note
        assert (report.prefill_flops, report.decode_flops) == (None, None)
        data = report.to_dict()["flops"]
        assert (data["prefill"], data["decode"], data["generation_note"]) == (None, None, note)
        if note == CACHELESS:  # the reason is transformers' own: the class keeps no cache, or cannot use one
            import torch

            device = getattr(ref, "device", "meta")
            model = build_reference(ref, device=device)
            ids = torch.zeros(1, 2, dtype=torch.long, device=device)
            with torch.no_grad():
                both = {"decoder_input_ids": ids} if model.config.is_encoder_decoder else {}
                output = model(input_ids=ids, use_cache=True, **both)
            if getattr(output, "past_key_values", None) is not None:
                with pytest.raises((TypeError, AttributeError, IndexError, RuntimeError, ValueError)):
                    reference_decode_flops(ref, SEQ_LEN)  # a step with the cache handed back fails in transformers
        return
    if model_class in NO_CACHE:  # the reason is transformers' own: the class returns no cache
        import torch

        model = build_reference(ref)
        output = model(input_ids=torch.zeros(1, 2, dtype=torch.long, device="meta"))
        assert getattr(output, "past_key_values", None) is None
        return
    assert report.prefill_flops == reference_prefill_flops(ref, SEQ_LEN)
    assert report.decode_flops == reference_decode_flops(ref, SEQ_LEN)
    assert report.decode_at(3) == reference_decode_flops(ref, 3)


@pytest.mark.parametrize(
    "model_type, model_class",
    [("bart", "BartForConditionalGeneration"), ("t5", "T5ForConditionalGeneration"), ("t5", "T5Model")],
)
def test_an_encoder_decoders_decode_step_attends_to_a_source_of_its_own_length(T, tmp_path, model_type, model_class):
    """The decoder's context and the source are two lengths: decode_at(context, source)."""
    from archzoo.reference import reference_decode_flops

    report, ref = _report(tmp_path, model_type, model_class)
    assert report.decode_at(4, 11) == reference_decode_flops(ref, 4, 11)
    assert report.decode_at(4, 11) != report.decode_at(4, 4)


@pytest.mark.parametrize(
    "model_type, model_class",
    [
        ("gpt2", "GPT2LMHeadModel"),
        ("bloom", "BloomForCausalLM"),
        ("llama", "LlamaForCausalLM"),
        ("bart", "BartForConditionalGeneration"),
        ("t5", "T5ForConditionalGeneration"),
    ],
)
def test_prefill_plus_decode_steps_is_what_generate_costs(T, tmp_path, model_type, model_class):
    """``generate`` (greedy, M new tokens, no early stop) under FlopCounterMode costs prefill(P) and one
    decode step for each later token: decode(P + 1 .. P + M - 1) for a decoder; from S source tokens,
    decode(2 .. M, S) for an encoder-decoder, whose first call already produced the first token."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    prompt, new = 6, 4
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, **BASES[model_type]}))
    reading = load_hf_config(path, HOST, hf_class=model_class)
    report = make_report(reading.architecture, reading.config, prompt)
    config = T.AutoConfig.from_pretrained(str(path))
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(T, model_class)(config).eval()
        ids = torch.ones(1, prompt, dtype=torch.long)
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model.generate(
                input_ids=ids,
                max_new_tokens=new,
                min_new_tokens=new,
                do_sample=False,
                num_beams=1,
                pad_token_id=0,
                eos_token_id=None,
                decoder_start_token_id=0 if config.is_encoder_decoder else None,
            )
    if config.is_encoder_decoder:
        steps = sum(report.decode_at(n, prompt) for n in range(2, new + 1))
    else:
        steps = sum(report.decode_at(n) for n in range(prompt + 1, prompt + new))
    assert counter.get_total_flops() == report.prefill_flops + steps


def test_prefill_keeps_the_logits_of_the_last_position_only():
    """GPT-2 small at N = 128: the forward pass less the LM head on 127 positions (2·d·V each)."""
    report = archzoo.count("gpt", 128)
    assert report.prefill_flops == report.flops - 127 * 2 * 768 * 50_257


def test_decode_at_n_attends_over_n_keys():
    """One GPT-2 small decode step at context N: every projection and the head on one token (2 x the
    non-embedding weights that multiply it, and the tied head's 2·d·V) plus the two attention products
    over N keys (2·2·N·d per layer). GPT-2's shapes from Radford et al. 2019 (L 12, d 768, V 50,257)."""
    L, d, d_ff, V = 12, 768, 3072, 50_257
    per_token = L * 2 * (4 * d * d + 2 * d * d_ff) + 2 * d * V
    for n in (1, 100, 1024):
        assert archzoo.count("gpt").decode_at(n) == per_token + L * 4 * n * d
