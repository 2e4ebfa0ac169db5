"""A plugin whose every string is hostile text: the architecture ``hostile-text``.

Its title, summary, citation, configuration descriptions, a string default, a ``Literal`` type, block
names, block descriptions and a symbol's meaning hold HTML, markdown, mermaid and template syntax and
characters no page can show. Plugin strings are as untrusted as registry strings: each must reach the
site as the same characters, shown literally. A script that runs sets ``window.__pwned`` to the name of
the field it came from.

`architecture` builds the architecture with any field replaced (the page-level tests put one payload in
one field); `plugin` wraps it as a plugin module for `archzoo.host.PluginHost(extra_plugins=...)`.
"""

from __future__ import annotations

import types
from typing import Any, Literal

from pydantic import Field, PositiveInt, create_model

from archzoo import ArchConfig, Architecture, hookimpl
from archzoo.blocks import composite, embedding, feed_forward, layer_norm, repeat
from archzoo.formula import sym

NAME = "hostile-text"


def payload(field: str) -> str:
    """Markup that runs a script naming ``field`` if it reaches a page as HTML, plus markdown, mermaid and
    template syntax, and characters that cannot be shown (C1 controls, DEL)."""
    return (
        f"<img src=x onerror=\"window.__pwned='{field}'\"> [link](javascript:window.__pwned='{field}') "
        f"`tick` | $$ x $$ {{{{ jinja }}}} %%{{init: {{}}}}%% #quot; \x80\x9f\x7f end"
    )


#: Every hostile field and its text in the plugin as installed.
FIELDS = (
    "title",
    "summary",
    "citation",
    "config_description",
    "config_default",
    "literal",
    "block_name",
    "block_description",
    "symbol_meaning",
)
DEFAULT_TEXTS = {field: payload(field) for field in FIELDS}


def architecture(**texts: Any) -> Architecture:
    """``hostile-text`` with the texts of `DEFAULT_TEXTS`, or those given (``block_name="x"``).

    ``build_error`` makes building the default configuration raise a ValueError with that message.
    """
    unknown = set(texts) - set(FIELDS) - {"build_error"}
    if unknown:
        raise TypeError(f"unknown hostile fields: {sorted(unknown)}")
    t = {**DEFAULT_TEXTS, **texts}
    build_error = texts.get("build_error")
    literal = Literal[t["literal"], "plain"]  # type: ignore[valid-type]
    config_model = create_model(
        "HostileConfig",
        __base__=ArchConfig,
        vocab_size=(PositiveInt, Field(100, description="vocabulary size")),
        d_model=(PositiveInt, Field(32, description=t["config_description"])),
        n_layers=(PositiveInt, Field(2, description="layers")),
        label=(str, Field(t["config_default"], description="a free text setting")),
        mode=(literal, Field(t["literal"], description="a choice")),
    )

    def build(cfg: Any):
        if build_error is not None:
            raise ValueError(build_error)
        d = sym("d", cfg.d_model, latex="d", meaning=t["symbol_meaning"])
        # the feed-forward is one node of the diagram and one bar of the chart: its name shows everywhere
        layer = composite(
            "layer",
            "encoder_layer",
            [
                feed_forward(t["block_name"], d, 4 * d, description=t["block_description"]),
                layer_norm("norm", d, description=t["block_description"]),
            ],
        )
        vocab = sym("V", cfg.vocab_size, latex="V", meaning="vocabulary size")
        return composite(
            "hostile",
            "model",
            [
                embedding("token", vocab, d, role="token"),
                repeat(layer, sym("L", cfg.n_layers, latex="L", meaning="layers"), name="layers"),
            ],
        )

    return Architecture(
        name=NAME,
        title=t["title"],
        summary=t["summary"],
        citation=t["citation"],
        config_model=config_model,
        build=build,
        seq_len=lambda cfg: 16,
    )


def plugin(**texts: Any) -> types.ModuleType:
    """A plugin module registering `architecture` (``PluginHost(extra_plugins={"hostile-text": plugin()})``)."""
    module = types.ModuleType("archzoo_hostile_text")

    def register_architectures(register):
        register(architecture(**texts))

    module.register_architectures = hookimpl(register_architectures)
    return module
