"""The registry entry's schema: the pydantic models of one YAML file, leaf models first, and its JSON Schema."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..architecture import Reference
from .published import parse_published

__all__ = [
    "REASONS",
    "SCHEMA_COMMENT",
    "SPEC_MODELS",
    "EntryReference",
    "EntrySpec",
    "Published",
    "Reconciliation",
    "Source",
    "entry_json_schema",
]

#: Reason codes for a computed count that differs from the published figure by more than rounding.
REASONS: dict[str, str] = {
    "rounded": "the authors printed a loosely rounded or nominal figure",
    "excludes-embeddings": "the published figure leaves out the embedding matrices",
    "includes-pooler": "the published figure counts a pooler this entry's configuration does not have",
    "excludes-pooler": "the published figure leaves out a pooler this entry's configuration has",
    "head-differs": "the published figure is for another task head (classifier, LM head) than this entry's",
    "tied-weights": "the published figure counts a tied weight twice, or this entry does not tie it",
    "vocab-differs": "the published figure is for another vocabulary size than the released model",
    "retracted-by-authors": "the authors later corrected the figure",
    "typo-in-source": "the published hyperparameters do not give the published size (an error in the source)",
    "tool-omits-parameters": "the figure comes from a tool that misses parameters (e.g. nn.Parameter tensors)",
}


#: The first line of an entry that points editors at the schema.
SCHEMA_COMMENT = "# yaml-language-server: $schema="


class _Model(BaseModel):
    # a NaN or infinite float (a reference's soft-cap of .nan) keeps its value in JSON, as the text json_number gives
    # it (pydantic's default writes null, which reads as "no value")
    model_config = ConfigDict(extra="forbid", frozen=True, ser_json_inf_nan="strings")


class Source(_Model):
    """Where the published figure is printed."""

    title: str = Field(min_length=1)
    authors: list[str] = Field(min_length=1)
    year: int = Field(ge=1950, le=2100)
    venue: str = Field(min_length=1)
    arxiv: str | None = Field(None, pattern=r"^\d{4}\.\d{4,5}$")
    url: str | None = Field(None, pattern=r"^https?://")
    locator: str = Field(min_length=1, description="table, section or README heading that prints the figure")


class Published(_Model):
    """The size as its authors printed it: the total, and for a mixture of experts the active parameters."""

    params: str = Field(description="exactly as printed: '110M', '1.3B', '1542M'")
    active_params: str | None = Field(
        None,
        description="a mixture of experts' active parameters (those one token uses), exactly as printed: '13B'",
    )
    source: Source

    @field_validator("params", "active_params")
    @classmethod
    def _parses(cls, value: str | None) -> str | None:
        if value is not None and parse_published(value)[0] <= 0:
            raise ValueError(
                f"a published size of {value!r} parameters cannot be right; write the figure as printed, e.g. '110M'"
            )
        return value

    @property
    def value(self) -> int:
        return parse_published(self.params)[0]

    @property
    def rounding(self) -> int:
        return parse_published(self.params)[1]

    @property
    def active_value(self) -> int | None:
        return None if self.active_params is None else parse_published(self.active_params)[0]

    @property
    def active_rounding(self) -> int | None:
        return None if self.active_params is None else parse_published(self.active_params)[1]


class EntryReference(_Model):
    """The implementation a user would load, and the arguments that build it."""

    target: str = Field(
        pattern=r"^(torch|transformers|timm)\.[A-Za-z0-9_.]+$",
        description="transformers.BertModel, torch.nn.Transformer or timm.vit_base_patch16_224",
    )
    config_class: str | None = Field(None, pattern=r"^transformers\.[A-Za-z0-9_]+Config$")
    kwargs: dict[str, Any] = {}
    model_kwargs: dict[str, Any] = {}
    measured: int | None = Field(None, gt=0, description="count pinned from a library CI cannot install (timm)")
    measured_with: str | None = Field(None, description="the library and version that measured it")

    @property
    def library(self) -> str:
        return self.target.split(".", 1)[0]

    def to_reference(self) -> Reference:
        """The `archzoo.Reference` that builds it (`archzoo verify`, the model page's code)."""
        return Reference(
            library=self.library,  # type: ignore[arg-type]  # the target's pattern allows only the three
            target=self.target,
            config_class=self.config_class,
            kwargs=self.kwargs,
            model_kwargs=self.model_kwargs,
        )


class Reconciliation(_Model):
    reason: Literal[tuple(REASONS)]  # type: ignore[valid-type]
    note: str = Field(min_length=10, description="one sentence: why the figures differ")


class EntrySpec(_Model):
    """One registry file."""

    architecture: str
    config: dict[str, Any] = {}
    title: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    tags: list[str] = []
    year: int = Field(ge=1950, le=2100)
    published: Published | None = None
    reference: EntryReference | None = None
    reconciliation: Reconciliation | None = None


#: The schema model at each key path of an entry, for required keys, valid keys and descriptions.
SPEC_MODELS: dict[tuple, type[BaseModel]] = {
    (): EntrySpec,
    ("published",): Published,
    ("published", "source"): Source,
    ("reference",): EntryReference,
    ("reconciliation",): Reconciliation,
}


def entry_json_schema() -> dict[str, Any]:
    """The JSON Schema of a registry entry, for editors (yaml-language-server) and `archzoo schema`."""
    schema = EntrySpec.model_json_schema()
    schema["title"] = "archzoo registry entry"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
