"""The shared vocabulary of symbols, and the symbols a plugin declares for its own architectures."""

from __future__ import annotations

import re

import pytest

import archzoo
from archzoo.formula import Poly
from archzoo.symbols import SHARED, DeclaredSymbol, declare_symbol, symbol


def _symbols(report) -> dict:
    """Every symbol the report's formulas use, by name."""
    found = {}
    for _, _, block in report.root.walk():
        for formula in (block.params, block.flops):
            found.update(formula.symbols)
    return found


def test_the_shared_vocabulary_holds_only_what_architectures_share():
    assert {"L", "V", "P", "d", "h", "d_h", "d_ff"} <= set(SHARED)
    # segment types and factorised embeddings are BERT's; channels, patches and pre-logits ViT's; labels
    # and classes mean different things in different plugins
    assert not {"T", "E", "C", "p", "n_p", "K", "r"} & set(SHARED)


def test_a_shared_symbol_is_bound_to_its_value():
    d = symbol("d", 768, definition="the width")
    assert isinstance(d, Poly) and d.evaluate() == 768
    bound = d.symbols["d"]
    assert (bound.latex, bound.meaning, bound.order, bound.definition) == (
        "d",
        "model width (d_model)",
        20,
        "the width",
    )


def test_a_declared_symbol_binds_its_name_latex_meaning_and_order():
    width = declare_symbol("d_pool", latex="d_{\\mathrm{pool}}", meaning="pooler width (pooler_size)", order=35)
    assert width == DeclaredSymbol("d_pool", "d_{\\mathrm{pool}}", "pooler width (pooler_size)", 35)
    formula = width(100, definition="as given")
    assert formula.evaluate() == 100 and formula.text() == "d_pool"
    bound = formula.symbols["d_pool"]
    assert (bound.latex, bound.meaning, bound.order, bound.definition) == (
        "d_{\\mathrm{pool}}",
        "pooler width (pooler_size)",
        35,
        "as given",
    )
    assert (symbol("d", 4) * width(3)).text() == "d·d_pool"  # printed in order: d is 20, d_pool 35


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        (
            ("d",),
            dict(latex="d", meaning="my width"),
            "symbol 'd' is archzoo's shared symbol for model width (d_model); use archzoo.symbols.symbol('d', value), or "
            "declare yours under another name",
        ),
        (
            ("N",),
            dict(latex="N", meaning="tokens"),
            "symbol 'N' is archzoo's shared symbol for the sequence length; use archzoo.symbols.symbol('N', value), or "
            "declare yours under another name",
        ),
        (
            ("two words",),
            dict(latex="x", meaning="m"),
            "symbol name 'two words' must be an identifier such as 'T' or 'd_pool'",
        ),
        (
            ("T",),
            dict(latex="T", meaning="m", order=1.5),
            "symbol 'T': order must be an int (its position among printed factors), got 1.5",
        ),
    ],
    ids=["shared-name", "sequence-length", "not-an-identifier", "float-order"],
)
def test_a_bad_declaration_is_refused(args, kwargs, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        declare_symbol(*args, **kwargs)


def test_a_symbol_outside_the_shared_vocabulary_says_how_to_declare_it():
    with pytest.raises(KeyError) as caught:
        symbol("T", 2)
    assert caught.value.args[0] == (
        f"symbol 'T' is not in archzoo's shared vocabulary ({', '.join(SHARED)}); declare it in your plugin with "
        "archzoo.symbols.declare_symbol('T', latex=..., meaning=..., order=...)"
    )


@pytest.mark.parametrize(
    "architecture, config, name, meaning, order",
    [
        ("bert", {}, "T", "token types (type_vocab_size)", 12),
        ("bert", dict(embedding_size=128, shared_layers=True), "E", "factorised embedding width (embedding_size)", 13),
        ("bert", dict(head="sequence_classification", num_labels=3), "K", "labels (num_labels)", 33),
        ("gpt", dict(head="token_classification", num_labels=3), "K", "labels (num_labels)", 33),
        ("vit", {}, "K", "classes (num_classes)", 33),
        ("vit", {}, "C", "image channels (channels)", 30),
        ("vit", {}, "p", "patch side in pixels (patch_size)", 31),
        ("vit", {}, "n_p", "patches per image, (image_size / patch_size)²", 32),
        ("vit", dict(representation_size=64), "r", "pre-logits width (representation_size)", 34),
        ("vit", dict(num_classes=0, pooler=True, pooler_size=64), "d_pool", "pooler output width (pooler_size)", 35),
    ],
)
def test_plugins_declare_the_symbols_only_they_use(architecture, config, name, meaning, order):
    bound = _symbols(archzoo.count(architecture, **config))[name]
    assert (bound.meaning, bound.order) == (meaning, order)
