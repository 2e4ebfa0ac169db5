"""The shared vocabulary of symbols, so every plugin writes ``d`` for d_model and ``L`` for layers, and the
way a plugin declares a symbol only its own architectures use (``T``, segment types, is BERT's).

A symbol's print order is its position among the factors of a printed monomial (``L·d·d_ff``): layers
come first (1-2), then vocabulary and positions (10-11), then widths (20-23); a plugin picks orders for
its own symbols in between or after (BERT's token types are 12, ViT's patch side 31).
"""

from __future__ import annotations

from dataclasses import dataclass

from .formula import N, Poly, sym

__all__ = ["SHARED", "DeclaredSymbol", "N", "declare_symbol", "symbol"]


@dataclass(frozen=True)
class DeclaredSymbol:
    """A symbol's name, LaTeX, meaning and print order; called with a value, that symbol bound to it:
    ``T(2)`` is the formula ``T`` with ``T = 2``."""

    name: str
    latex: str
    meaning: str
    order: int = 50

    def __call__(self, value: int, *, definition: str = "") -> Poly:
        """This symbol bound to ``value``; ``definition`` says how a derived value was computed (``"d / h"``)."""
        return sym(self.name, value, latex=self.latex, meaning=self.meaning, definition=definition, order=self.order)


#: The symbols every architecture shares, by name; `symbol` binds them to a value.
SHARED: dict[str, DeclaredSymbol] = {
    s.name: s
    for s in (
        DeclaredSymbol("L", "L", "number of layers (n_layers)", 1),
        DeclaredSymbol("L_e", "L_{e}", "encoder layers (n_encoder_layers)", 1),
        DeclaredSymbol("L_d", "L_{d}", "decoder layers (n_decoder_layers)", 2),
        DeclaredSymbol("V", "V", "vocabulary size (vocab_size)", 10),
        DeclaredSymbol("P", "P", "learned positions (max_positions)", 11),
        DeclaredSymbol("d", "d", "model width (d_model)", 20),
        DeclaredSymbol("h", "h", "attention heads (n_heads)", 21),
        DeclaredSymbol("d_h", "d_{h}", "width of one head (d_head)", 22),
        DeclaredSymbol("d_ff", "d_{\\mathrm{ff}}", "feed-forward width (d_ff)", 23),
    )
}


def declare_symbol(name: str, *, latex: str, meaning: str, order: int = 50) -> DeclaredSymbol:
    """A symbol of a plugin's own: ``T = declare_symbol("T", latex="T", meaning="token types
    (type_vocab_size)", order=12)`` at module level, then ``T(cfg.type_vocab_size)`` in ``build``.

    A name of the shared vocabulary is refused: use `symbol` for it, so that ``d`` means the model
    width in every architecture.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"symbol name {name!r} must be an identifier such as 'T' or 'd_pool'")
    if name == "N" or name in SHARED:
        meaning_of = "the sequence length" if name == "N" else SHARED[name].meaning
        raise ValueError(
            f"symbol {name!r} is archzoo's shared symbol for {meaning_of}; use "
            f"archzoo.symbols.symbol({name!r}, value), or declare yours under another name"
        )
    if type(order) is not int:
        raise ValueError(f"symbol {name!r}: order must be an int (its position among printed factors), got {order!r}")
    return DeclaredSymbol(name, latex, meaning, order)


def symbol(name: str, value: int, *, definition: str = "") -> Poly:
    """The shared symbol ``name`` bound to ``value`` (``symbol("d", 768)``)."""
    try:
        shared = SHARED[name]
    except KeyError:
        raise KeyError(
            f"symbol {name!r} is not in archzoo's shared vocabulary ({', '.join(SHARED)}); declare it "
            f"in your plugin with archzoo.symbols.declare_symbol({name!r}, latex=..., meaning=..., "
            "order=...)"
        ) from None
    return shared(value, definition=definition)
