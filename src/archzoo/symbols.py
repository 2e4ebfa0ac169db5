"""The shared vocabulary of symbols, so every plugin writes ``d`` for d_model and ``L`` for layers."""

from __future__ import annotations

from .formula import N, Poly, sym

__all__ = ["symbol", "STANDARD", "N"]

#: name -> (LaTeX, meaning, print order)
STANDARD: dict[str, tuple[str, str, int]] = {
    "L": ("L", "number of layers (n_layers)", 1),
    "L_e": ("L_{e}", "encoder layers (n_encoder_layers)", 1),
    "L_d": ("L_{d}", "decoder layers (n_decoder_layers)", 2),
    "V": ("V", "vocabulary size (vocab_size)", 10),
    "P": ("P", "learned positions (max_positions)", 11),
    "T": ("T", "token types (type_vocab_size)", 12),
    "E": ("E", "factorised embedding width (embedding_size)", 13),
    "d": ("d", "model width (d_model)", 20),
    "h": ("h", "attention heads (n_heads)", 21),
    "d_h": ("d_{h}", "width of one head (d_head)", 22),
    "d_ff": ("d_{\\mathrm{ff}}", "feed-forward width (d_ff)", 23),
    "C": ("C", "image channels (channels)", 30),
    "p": ("p", "patch side in pixels (patch_size)", 31),
    "n_p": ("n_{p}", "patches per image, (image_size / patch_size)²", 32),
    "K": ("K", "classes (num_classes)", 33),
    "r": ("r", "pre-logits width (representation_size)", 34),
}


def symbol(name: str, value: int, *, definition: str = "") -> Poly:
    """The standard symbol ``name`` bound to ``value`` (``symbol("d", 768)``)."""
    latex, meaning, order = STANDARD[name]
    return sym(name, value, latex=latex, meaning=meaning, definition=definition, order=order)
