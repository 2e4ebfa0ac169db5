"""One configuration validator (issue 21): `archzoo.architecture.parse_config` validates a configuration for every
caller (the CLI's ``--set`` and ``--config``, the Python API, a ``config.json``), through the plugin guard and with
archzoo's wording; `validate_config` is the guarded call for callers that word pydantic's errors themselves."""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError, model_validator

from archzoo.architecture import ArchConfig, Architecture, parse_config, validate_config
from archzoo.blocks import embedding
from archzoo.errors import ConfigError, HFConfigError, PluginError


class TinyConfig(ArchConfig):
    """A configuration whose check fails the way a plugin's code can: a refusal (ValueError) or a bug."""

    n_layers: int = Field(2, description="layers")
    fail_with: str = Field("", description="what the model's own check raises")

    @model_validator(mode="after")
    def _check(self) -> TinyConfig:
        if self.fail_with == "value":
            raise ValueError("n_layers: refused by the plugin's own check")
        if self.fail_with == "bug":
            raise RuntimeError("boom")
        if self.fail_with == "exit":
            raise SystemExit(3)
        return self


TINY = Architecture(
    name="tiny",
    title="Tiny",
    summary="a test architecture",
    citation="none",
    config_model=TinyConfig,
    build=lambda config: embedding("token", 10, 4),
    seq_len=lambda config: 8,
    plugin="tinyplugin",
)


def test_a_valid_configuration_is_the_models_instance():
    config = parse_config(TINY, {"n_layers": 4})
    assert isinstance(config, TinyConfig) and config.n_layers == 4
    assert validate_config(TINY, {}) == TinyConfig()


def test_every_problem_is_a_line_naming_its_key():
    with pytest.raises(ConfigError) as caught:
        parse_config(TINY, {"n_layers": "x", "typo": 1}, source="--set")
    assert str(caught.value).splitlines() == [
        "--set: n_layers: expected an integer, got the string 'x'",
        "--set: typo: unknown key; valid keys: n_layers, fail_with",
    ]


def test_a_caller_says_where_a_key_came_from():
    with pytest.raises(HFConfigError) as caught:
        parse_config(
            TINY, {"n_layers": "x"}, error=HFConfigError, locate=lambda key: f"config.json: n_layer, read as {key}"
        )
    assert str(caught.value) == "config.json: n_layer, read as n_layers: expected an integer, got the string 'x'"


def test_a_plugins_refusal_is_a_configuration_error_and_its_bug_a_plugin_error():
    with pytest.raises(ConfigError, match=r"^config: n_layers: refused by the plugin's own check$"):
        parse_config(TINY, {"fail_with": "value"})
    with pytest.raises(PluginError) as caught:
        parse_config(TINY, {"fail_with": "bug"})
    assert str(caught.value) == "plugin 'tinyplugin': its configuration model raised RuntimeError: boom"
    with pytest.raises(PluginError, match=r"its configuration model raised SystemExit: 3$"):
        validate_config(TINY, {"fail_with": "exit"})


def test_validate_config_leaves_the_wording_to_its_caller():
    with pytest.raises(ValidationError) as caught:
        validate_config(TINY, {"n_layers": "x"})
    assert [e["loc"] for e in caught.value.errors()] == [("n_layers",)]
