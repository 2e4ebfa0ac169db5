"""The ``archzoo`` command: count configurations, list plugins, look up the registry, build the site."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import yaml

from .architecture import parse_config
from .errors import ArchzooError, ConfigError
from .host import ENV_PLUGINS, ENV_STRICT, ENV_TRACE, PluginHost, get_host, reset_host

__all__ = ["main", "cli"]

EPILOG_COUNT = """\b
Examples:
  archzoo count bert                                 BERT-base, as BertModel
  archzoo count gpt --set n_layers=24 --set d_model=1024 --set n_heads=16
  archzoo count vit --set patch_size=14 --seq-len 257 --json
  archzoo count transformer --config big.yaml        keys from a YAML or JSON file
  archzoo count --hf-config path/to/config.json      a Hugging Face config (base model)
"""


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False))


def _host(ctx: click.Context) -> PluginHost:
    return ctx.obj["host"]


def _warn_problems(host: PluginHost) -> None:
    for problem in host.problems:
        click.echo(f"archzoo: warning: {problem} (skipped; --strict makes this an error)", err=True)


def _parse_set(pairs: tuple[str, ...]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {pair!r}: expected KEY=VALUE, for example --set n_layers=24")
        try:
            values[key.strip()] = yaml.safe_load(raw) if raw.strip() else raw
        except yaml.YAMLError:
            values[key.strip()] = raw
    return values


def _read_config_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file ({exc.strerror or exc}); check the path") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{line}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of configuration keys, got {type(data).__name__}")
    return data


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=f"""\b
Environment:
  {ENV_PLUGINS}=a,b        load only these plugins
  {ENV_STRICT}=1           a broken plugin is an error, not a warning
  {ENV_TRACE}=1    print every plugin hook call
""",
)
@click.option("--strict", is_flag=True, help="Fail when any plugin cannot be loaded, instead of skipping it.")
@click.version_option(package_name="archzoo")
@click.pass_context
def cli(ctx: click.Context, strict: bool) -> None:
    """How big is this model, exactly, and why?

    archzoo counts the parameters, FLOPs and memory of Transformer models from their building
    blocks, with the formula behind every number, and reconciles them with published sizes.
    """
    ctx.ensure_object(dict)
    if strict:
        reset_host(PluginHost(strict=True))
    ctx.obj["host"] = get_host()
    _warn_problems(ctx.obj["host"])


@cli.command(epilog=EPILOG_COUNT)
@click.argument("architecture", required=False)
@click.option("--config", "config_file", type=click.Path(path_type=Path), help="YAML or JSON file of configuration keys.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Set one configuration key (repeatable).")
@click.option("--hf-config", type=click.Path(path_type=Path), help="A Hugging Face config.json; counts the base model.")
@click.option("--seq-len", type=click.IntRange(min=1), help="Sequence length N for FLOPs (default: the model's context).")
@click.option("--depth", type=click.IntRange(min=0), default=3, show_default=True, help="Levels of the block tree to show.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (schema archzoo.report/1).")
@click.pass_context
def count(ctx, architecture, config_file, sets, hf_config, seq_len, depth, as_json):
    """Count one configuration of an architecture: parameters, FLOPs, memory, per block.

    Keys not given take the architecture's defaults (the classic model); `archzoo plugins`
    lists every key with its default.
    """
    from .report import make_report

    host = _host(ctx)
    if hf_config is not None:
        if architecture or config_file:
            raise click.UsageError("--hf-config describes the whole model: give no ARCHITECTURE or --config with it")
        from .hf_config import read_hf_config

        arch, config = read_hf_config(hf_config, host)
        if sets:
            config = parse_config(arch, {**config.model_dump(exclude_unset=True), **_parse_set(sets)}, source="--set")
    else:
        if not architecture:
            raise click.UsageError(
                f"name an architecture ({', '.join(host.architectures)}) or give --hf-config"
            )
        arch = host.architecture(architecture)
        values = _read_config_file(config_file) if config_file else {}
        source = str(config_file) if config_file else "--set"
        values.update(_parse_set(sets))
        if sets:
            source = f"{config_file} and --set" if config_file else "--set"
        config = parse_config(arch, values, source=source)
    report = make_report(arch, config, seq_len)
    if as_json:
        _emit_json(report.to_dict())
        return
    from .terminal import print_report

    print_report(report, max_depth=depth)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def plugins(ctx, as_json):
    """List loaded plugins, their architectures and every configuration key with its default."""
    host = _host(ctx)
    data = []
    for info in host.plugins.values():
        archs = []
        for name in info.architectures:
            arch = host.architectures[name]
            archs.append({
                "name": name,
                "title": arch.title,
                "hf_model_types": sorted(arch.hf_model_types),
                "config": [{"key": k, "type": t, "default": d, "description": desc}
                           for k, t, d, desc in arch.config_fields()],
            })
        data.append({"name": info.name, "version": info.version, "source": info.source, "module": info.module,
                     "architectures": archs, "registry_dirs": [str(p) for p in info.registry_dirs]})
    problems = [{"plugin": p.plugin, "reason": p.reason} for p in host.problems]
    if as_json:
        _emit_json({"plugins": data, "problems": problems})
        return
    for plugin in data:
        click.secho(f"{plugin['name']} {plugin['version']}", bold=True, nl=False)
        click.echo(f"  ({plugin['module']}; {plugin['source']})")
        for arch in plugin["architectures"]:
            hf = f"  reads HF model types: {', '.join(arch['hf_model_types'])}" if arch["hf_model_types"] else ""
            click.echo(f"  architecture {arch['name']}: {arch['title']}{hf}")
            width = max(len(f["key"]) for f in arch["config"])
            for f in arch["config"]:
                click.echo(f"    {f['key']:<{width}}  = {json.dumps(f['default']):<8} {f['description']}")
    for p in problems:
        click.secho(f"not loaded: {p['plugin']}: {p['reason']}", fg="red")


def main(argv: list[str] | None = None) -> int:
    """Entry point: user mistakes print one clear error and exit 1, never a traceback."""
    try:
        cli.main(args=argv, prog_name="archzoo", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("archzoo: aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except ArchzooError as exc:
        click.echo(f"archzoo: error: {exc}", err=True)
        return 1
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
