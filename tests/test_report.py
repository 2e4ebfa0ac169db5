"""Reports: human units, weight sizes, KV cache and the attention crossover."""

import pytest

import archzoo
from archzoo.report import human_bytes, human_count


@pytest.mark.parametrize(
    "n, text",
    [(0, "0"), (999, "999"), (1_000, "1.00K"), (999_999, "1.00M"), (9_996_000, "10.0M"),
     (109_482_240, "109.5M"), (999_999_999, "1.00B"), (1_557_611_200, "1.56B"), (174_604_259_328, "174.6B")],
)
def test_human_count(n, text):
    assert human_count(n) == text


def test_human_bytes_is_decimal():
    assert human_bytes(437_928_960) == "437.9 MB"
    assert human_bytes(512) == "512 B"


def test_weight_bytes_per_dtype_are_whole_bytes():
    report = archzoo.count("gpt", n_layers=1, d_model=8, n_heads=2, vocab_size=3, max_positions=1)
    sizes = report.weight_bytes()
    assert sizes["fp32"] == 4 * report.params
    assert sizes["bf16"] == sizes["fp16"] == 2 * report.params
    assert sizes["int4"] == (report.params + 1) // 2 and isinstance(sizes["int4"], int)


def test_kv_cache_per_token_gpt2():
    # GPT-2 small caches K and V of 768 for each of 12 layers: 2 * 12 * 768 = 18,432 elements per token
    assert archzoo.count("gpt").kv_cache_elements_per_token == 18_432
    assert archzoo.count("bert").kv_cache_elements_per_token == 0


def test_attention_overtakes_where_the_quadratic_term_wins():
    report = archzoo.count("gpt", head="none")
    n = report.attention_overtakes_at
    total, attention = report.flops_at(n)
    assert attention > total - attention
    total, attention = report.flops_at(n - 1)
    assert attention <= total - attention


def test_human_count_rounds_once_from_the_exact_value():
    assert human_count(38_654_705_664) == "38.7B"  # 38.654..., not 38.65 then 38.6
    assert human_count(28_348_416) == "28.3M"
    assert human_count(999_960_000) == "1.00B"
