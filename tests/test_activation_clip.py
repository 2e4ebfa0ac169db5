"""The clip plugin's activation formula (archzoo_clip.activation) against what autograd saves for backward in
transformers' CLIP classes (archzoo.memory.measure_activations): the text tower over the N caption tokens, the vision
tower over the image's n_p + 1 tokens whatever N is, the embeddings, poolings and projections, CLIPModel's similarity,
and the gap to Korthikanti et al.'s layer."""

from __future__ import annotations

import random

import pytest

from family_checks import ACTIVATION_CASES, counter

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.sweep]

#: the module lists of layers a recomputed step checkpoints, per head (a tower's own class is the tower)
LAYER_LISTS = {
    "model": ("text_model.encoder.layers", "vision_model.encoder.layers"),
    "text": ("encoder.layers",),
    "text_projection": ("text_model.encoder.layers",),
    "vision": ("encoder.layers",),
    "vision_projection": ("vision_model.encoder.layers",),
    "image_classification": ("vision_model.encoder.layers",),
}


def _config(seed: int) -> dict:
    """A small random CLIP: each tower's width, heads, layers, MLP width and activation of its own, an image whose
    side the patches tile or not, and each class (every head among any six seeds in a row)."""
    rng = random.Random(seed)
    return dict(
        head=list(LAYER_LISTS)[seed % len(LAYER_LISTS)], vocab_size=rng.choice([64, 97]), max_positions=24,
        d_model=16, n_heads=rng.choice([2, 4]), n_layers=rng.choice([1, 2, 3]), d_ff=rng.choice([24, 40]),
        activation=rng.choice(["quick_gelu", "gelu"]), image_size=rng.choice([12, 14]), patch_size=rng.choice([4, 6]),
        channels=rng.choice([1, 3]), vision_d_model=24, vision_n_heads=rng.choice([2, 3]),
        vision_n_layers=rng.choice([1, 2, 3]), vision_d_ff=rng.choice([32, 48]),
        vision_activation=rng.choice(["quick_gelu", "gelu", "gelu_new"]), projection_dim=rng.choice([8, 12]),
        num_labels=rng.choice([0, 3]),
    )  # fmt: skip


def _check(config: dict, n: int, dtype: str, attention: str, recompute: bool, device: str) -> None:
    from archzoo.testing import assert_activation_memory_matches

    assert_activation_memory_matches(
        "clip",
        config,
        n,
        dtype=dtype,  # type: ignore[arg-type]
        attention=attention,  # type: ignore[arg-type]
        recompute=LAYER_LISTS[config.get("head", "model")] if recompute else (),
        device=device,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("case", [pytest.param(c, id="-".join(map(str, c))) for c in ACTIVATION_CASES])
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_activation_formula_is_what_autograd_saves(seed, case):
    """In total and block by block (both towers, their embeddings, norms and layers, the projections, the classifier),
    at a caption length that changes with the case."""
    _check(_config(seed), 3 + 3 * seed, *case)


@pytest.mark.parametrize(
    "options",
    [
        # both towers, the vision tower deeper (its layer is the one Korthikanti's is compared with) and the text
        # tower's one layer takes the causal mask itself when recomputed
        dict(head="model", n_layers=1, vision_n_layers=2),
        dict(head="model", n_layers=3, vision_n_layers=1, activation="gelu", vision_activation="relu"),
        dict(head="text_projection", n_layers=2),
        dict(head="vision", vision_n_layers=2, image_size=14, patch_size=4),  # the patches leave a margin
        dict(head="image_classification", vision_n_layers=1, num_labels=0),  # no classifier: an identity
    ],
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_each_option_that_changes_the_saves(options, dtype):
    """Each against autograd, at a caption shorter and one longer than the image's tokens, recomputed, fused."""
    config = dict(vocab_size=64, max_positions=24, d_model=16, n_heads=2, d_ff=24, image_size=12, patch_size=4,
                  vision_d_model=24, vision_n_heads=2, vision_d_ff=40, projection_dim=8) | options  # fmt: skip
    for n in (3, 17):
        _check(config, n, dtype, "eager", False, "meta")
    _check(config, 6, dtype, "eager", True, "meta")
    _check(config, 6, dtype, "fused", False, "cpu")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_vit_b_32_shrunk(dtype):
    """CLIP ViT-B/32's shape (text 512 wide, 8 heads; vision 768 wide, 12 heads, 49 patches of 32 pixels; quick_gelu)
    with two layers a tower and a short vocabulary, at the longest caption of 77 tokens, on the meta device."""
    _check(dict(n_layers=2, vision_n_layers=2, vocab_size=1000), 77, dtype, "eager", False, "meta")


@pytest.mark.slow
def test_vit_b_32_whole():
    """CLIP ViT-B/32 as transformers' CLIPConfig gives it, twelve layers a tower, at 77 caption tokens, bf16."""
    _check({}, 77, "bf16", "eager", False, "meta")


def test_korthikanti_plus_the_named_gap_is_the_exact_vision_layer():
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    # a deeper vision tower: its layer is the one compared, over 3² + 1 = 10 image tokens at N = 11 caption tokens
    report = counter("clip")(11, n_layers=1, d_model=16, n_heads=2, d_ff=64, vision_n_layers=2, vision_d_model=32,
                             vision_n_heads=4, vision_d_ff=128, image_size=12, patch_size=4, vision_activation="gelu",
                             max_positions=16)  # fmt: skip
    layer = activation_formula(report, dtype="bf16").per_copy["clip.vision_model.layers.layer"]
    gap = {t.name: t.bytes for t in korthikanti_gap(report)}
    assert (korthikanti_layer_bytes(report) + total(gap.values()) - layer).is_zero()
    # per row: two LayerNorms (2·32 + 8 bytes each), q_proj's input, q, k, v and out_proj's input (5·2·32), fc1's input
    # (2·32), GELU's input and fc2's (2·2·128); and the 4·rows² probabilities in fp32 and bf16 (6 bytes): at 10 rows
    # less at 11
    per_row = 2 * (2 * 32 + 8) + 5 * 2 * 32 + 2 * 32 + 2 * 2 * 128
    assert gap["image tokens"].evaluate(N=11) == per_row * (10 - 11) + 6 * 4 * (10**2 - 11**2)


def test_the_json_answers_what_autograd_saves():
    """`archzoo count clip --json`'s figure is the formula's, no longer a refusal, and equals autograd's bytes."""
    from archzoo.memory import measure_activations, memory_dict

    report = counter("clip")(7, vocab_size=64, max_positions=16, d_model=16, n_heads=2, n_layers=2, d_ff=24,
                             image_size=12, patch_size=4, vision_d_model=24, vision_n_heads=2, vision_n_layers=2,
                             vision_d_ff=40, projection_dim=8)  # fmt: skip
    figures = memory_dict(report)["activations"]
    ref = report.architecture.reference(report.config)
    assert figures["eager_fp32"]["bytes"] == measure_activations(ref, 7, dtype="fp32").total_bytes
    assert figures["eager_bf16"]["bytes"] == measure_activations(ref, 7, dtype="bf16").total_bytes


@pytest.mark.parametrize("seed", range(1, 9))
def test_the_gap_explains_every_random_configuration(seed):
    """Korthikanti's layer plus the named gap is the exact bytes of the layer it is compared with: the text tower's,
    or the vision tower's (over its n_p + 1 rows) where that tower is deeper or alone."""
    from archzoo.formula import total
    from archzoo.memory import activation_formula, korthikanti_gap, korthikanti_layer_bytes

    config = _config(seed)
    report = counter("clip")(7, **config)
    text = config["head"] in ("model", "text", "text_projection")
    vision = config["head"] not in ("text", "text_projection")
    tower = "text_model" if text and not (vision and config["vision_n_layers"] > config["n_layers"]) else "vision_model"
    layer = activation_formula(report, dtype="bf16").per_copy[f"clip.{tower}.layers.layer"]
    gap = total(t.bytes for t in korthikanti_gap(report))
    assert (korthikanti_layer_bytes(report) + gap - layer).is_zero()
