"""The ``archzoo`` command: count configurations, list plugins, look up the registry, build the site."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .errors import ArchzooError, ConfigError
from .host import ENV_PLUGINS, ENV_STRICT, ENV_TRACE, PluginHost, get_host, reset_host

__all__ = ["cli", "main"]

EPILOG_COUNT = """\b
Examples:
  archzoo count bert                                 BERT-base, as BertModel
  archzoo count gpt --set n_layers=24 --set d_model=1024 --set n_heads=16
  archzoo count vit --set patch_size=14 --json        N follows: 16 x 16 patches + [CLS]
  archzoo count transformer --config big.yaml        keys from a YAML or JSON file
  archzoo count --hf-config path/to/config.json      a Hugging Face config (base model)
  archzoo count --hf-config config.json --hf-class auto --explain
                                                     the class in "architectures", and every key's fate
"""


def _epilog_sections(epilog: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """An epilog as written here, ``Title:`` lines each over ``  term  description`` items (a line indented
    further continues the description above), as (title, [(term, description)]) sections."""
    sections: list[tuple[str, list[tuple[str, str]]]] = []
    for line in epilog.splitlines():
        if not line.strip() or line.strip() == "\b":
            continue
        if not line.startswith(" "):
            sections.append((line.strip(), []))
        elif line.startswith("   ") and sections and sections[-1][1]:
            term, description = sections[-1][1][-1]
            sections[-1][1][-1] = (term, f"{description} {line.strip()}".strip())
        else:
            term, _, description = line.strip().partition("  ")
            sections[-1][1].append((term, description.strip()))
    return sections


def _continued(command: str, width: int) -> list[str]:
    """A command too long for one line, broken between words with the shell's `` \\`` continuation, so
    that it can still be pasted as it is shown."""
    lines: list[str] = []
    for word in command.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) + 2 <= width:
            lines[-1] += " " + word
        else:
            lines.append(word if not lines else "  " + word)
    return [line + " \\" for line in lines[:-1]] + lines[-1:]


class _LaidOut:
    """Examples and environment variables laid out to the terminal's width as click lays out options: a
    description wraps between words, a long command breaks as the shell continues a line."""

    epilog: str | None

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for title, items in _epilog_sections(self.epilog or ""):
            formatter.write_paragraph()
            with formatter.indentation():
                formatter.write_text(title)
                with formatter.indentation():
                    room = formatter.width - formatter.current_indent
                    rows: list[tuple[str, str]] = []
                    for term, description in items:
                        if len(term) <= room:
                            rows.append((term, description))
                            continue
                        if rows:
                            formatter.write_dl(rows, col_max=min(30, room // 2))
                            rows = []
                        for line in _continued(term, room):
                            formatter.write(f"{'':>{formatter.current_indent}}{line}\n")
                        if description:
                            with formatter.indentation(), formatter.indentation():
                                formatter.write_text(description)
                    if rows:
                        formatter.write_dl(rows, col_max=min(30, room // 2))


class _Command(_LaidOut, click.Command):
    pass


class _Group(_LaidOut, click.Group):
    command_class = _Command


def _strict_json(data: Any, **options: Any) -> str:
    """``data`` as RFC 8259 JSON: a NaN or infinite float anywhere in it, which Python's json module would write as a
    bare ``NaN`` a strict reader refuses, is written as the text ``json_number`` gives it."""
    try:
        return json.dumps(data, allow_nan=False, **options)
    except ValueError:  # rare: walk the data only then (a 20,000-entry listing is written at C speed otherwise)
        from .architecture import json_number

        return json.dumps(json_number(data), allow_nan=False, **options)


def _emit_json(data: Any) -> None:
    click.echo(_strict_json(data, indent=2, sort_keys=False))


def _emit_json_rows(rows: list[dict[str, Any]]) -> None:
    """A JSON list with one record a line: as readable as an indented list, and written by json's C
    encoder (indenting falls back to the pure-Python one, a third of a 20,000-entry listing's time)."""
    if not rows:
        click.echo("[]")
        return
    click.echo("[\n" + ",\n".join("  " + _strict_json(row) for row in rows) + "\n]")


def _host(ctx: click.Context) -> PluginHost:
    return ctx.obj["host"]


def _warn_problems(host: PluginHost, since: int = 0) -> None:
    for problem in host.problems[since:]:
        click.echo(f"archzoo: warning: {problem} (skipped; --strict makes this an error)", err=True)


def _parse_set(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``--set KEY=VALUE`` pairs as configuration values: each VALUE read as one YAML 1.2 scalar or flow
    value (``12:30`` stays text), each KEY given once."""
    if not pairs:
        return {}  # the YAML reader, and yaml with it, is imported only when there is a value to read
    from .errors import InputError, YAMLSyntaxError
    from .files import key_path, load_yaml

    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {pair!r}: expected KEY=VALUE, for example --set n_layers=24")
        if key in values:
            raise ConfigError(f"--set {key_path((key,))}: given twice; give each key once")
        if not raw.strip():
            values[key] = raw
            continue
        try:
            values[key] = load_yaml(f"{json.dumps(key)}: {raw}", "--set", InputError, subject="the value")[key]
        except YAMLSyntaxError:
            values[key] = raw  # not a YAML value: the text as typed (validation says what was expected)
        except InputError as exc:
            raise ConfigError(f"--set {exc.key or key_path((key,))}: {exc.message}") from None
    return values


def _read_config_file(path: Path) -> dict[str, Any]:
    from .files import load_config_file

    data = load_config_file(path, ConfigError)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of configuration keys, got {type(data).__name__}")
    return data


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=f"""\b
Environment:
  {ENV_PLUGINS}=a,b  load only these plugins
  {ENV_STRICT}=1  a broken plugin is an error, not a warning
  {ENV_TRACE}=1  print every plugin hook call
  ARCHZOO_REGISTRY=dir1:dir2  registry folders of list, show, compare, validate, verify
                              (default ./registry) and of a build without a mkdocs.yml
  ARCHZOO_CACHE_DIR=DIR  where the registry index and the plugin manifest are cached (default
                         $XDG_CACHE_HOME/archzoo, else ~/.cache/archzoo)
  XDG_CACHE_HOME=DIR  the cache folder ARCHZOO_CACHE_DIR defaults under
  SOURCE_DATE_EPOCH=SECONDS  the date a built site is stamped with (default: a fixed date, so builds
                             are reproducible)
  COLUMNS=N  the terminal width tables fit (default: the window's)
  TTY_COMPATIBLE=1  tables drawn for a terminal even when piped (rich; piped output is plain text)
  NO_COLOR=1  no colours or bold
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
    host = ctx.obj["host"] = get_host()
    _warn_problems(host)
    # a plugin is imported when the command asks for it: a problem found then is reported when the command ends
    warned = len(host.problems)
    ctx.call_on_close(lambda: _warn_problems(host, since=warned))


units_option = click.option(
    "--units",
    type=click.Choice(["flops", "macs"]),
    default="flops",
    show_default=True,
    help="FLOP figures as FLOPs (2 per multiply-accumulate, as FlopCounterMode counts), or as MACs (every figure "
    "halved, and labelled MACs).",
)
memory_option = click.option(
    "--memory",
    "show_memory",
    is_flag=True,
    help="Also print the inference and training peak memory, each part with the assumption behind it.",
)


def _print_peaks(report) -> None:
    """The inference and training peaks, part by part with their assumptions, or why they are not known."""
    from .memory import UnsupportedActivationMemory, inference_peak, training_peak
    from .terminal import print_lines

    for peak in (inference_peak, training_peak):
        try:
            lines = peak(report).lines()
        except UnsupportedActivationMemory as exc:
            lines = [f"{peak.__name__.replace('_', ' ')}: {exc}"]
        print_lines(["", *lines])


@cli.command(epilog=EPILOG_COUNT)
@click.argument("architecture", required=False)
@click.option(
    "--config", "config_file", type=click.Path(path_type=Path), help="YAML or JSON file of configuration keys."
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Set one configuration key (repeatable).")
@click.option("--hf-config", type=click.Path(path_type=Path), help="A Hugging Face config.json; counts the base model.")
@click.option(
    "--hf-class",
    metavar="NAME|auto",
    help="With --hf-config: count the transformers class NAME (e.g. BertForMaskedLM), or with 'auto' the "
    "first class in the file's architectures list (default: the base model AutoModel builds).",
)
@click.option(
    "--explain",
    is_flag=True,
    help="With --hf-config: list every key of the file, and what archzoo did with it (read as which key, "
    "ignored and why, or defaulted).",
)
@click.option(
    "--seq-len",
    type=int,
    help="Sequence length N for FLOPs (default: the model's context; for images, patches plus special tokens).",
)
@click.option(
    "--depth", type=click.IntRange(min=0), default=3, show_default=True, help="Levels of the block tree to show."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the report as JSON (schema archzoo.report/1; with --hf-config, an hf_config section lists every key).",
)
@units_option
@memory_option
@click.pass_context
def count(
    ctx, architecture, config_file, sets, hf_config, hf_class, explain, seq_len, depth, as_json, units, show_memory
):
    """Count one configuration of an architecture: parameters, FLOPs, memory, per block.

    Keys not given take the architecture's defaults (the classic model); `archzoo plugins`
    lists every key with its default.
    """
    from .report import make_report

    host = _host(ctx)
    reading = None
    if hf_config is not None:
        if architecture or config_file:
            raise click.UsageError("--hf-config describes the whole model: give no ARCHITECTURE or --config with it")
        from .hf_config import load_hf_config

        reading = load_hf_config(hf_config, host, _parse_set(sets), hf_class)
        arch, config = reading.architecture, reading.config
    else:
        if hf_class is not None or explain:
            raise click.UsageError(
                f"{'--hf-class' if hf_class is not None else '--explain'} goes with --hf-config: "
                "it is about a Hugging Face config.json"
            )
        if not architecture:
            raise click.UsageError(f"name an architecture ({', '.join(host.architectures)}) or give --hf-config")
        from .architecture import parse_config

        arch = host.architecture(architecture)
        values = _read_config_file(config_file) if config_file else {}
        source = str(config_file) if config_file else "--set"
        values.update(_parse_set(sets))
        if sets:
            source = f"{config_file} and --set" if config_file else "--set"
        config = parse_config(arch, values, source=source)
    report = make_report(arch, config, seq_len, seq_len_name="--seq-len")
    if as_json:
        from .report_json import report_dict

        data = report_dict(report, units)
        if reading is not None:
            data["hf_config"] = reading.to_dict()
        _emit_json(data)
        return
    from .terminal import print_report

    print_report(report, max_depth=depth, units=units)
    if show_memory:
        _print_peaks(report)
    if explain:
        _print_hf_reading(reading)


def _print_hf_reading(reading) -> None:
    """What ``--explain`` adds: the class counted, then every key of the file and what became of it."""
    from .terminal import Column, print_lines, print_table

    source = {
        "AutoModel": "the base model AutoModel builds",
        "--hf-class": "named by --hf-class",
        "architectures": "the first entry of architectures",
    }.get(reading.class_source, "")
    if reading.model_class:
        sets = ", ".join(f"{k}={json.dumps(v)}" for k, v in reading.class_values.items())
        print_lines(
            [
                "",
                f"{reading.path}: model type {reading.model_type} ({reading.config_class}), counted as "
                f"{reading.model_class} ({source}{'; it sets ' + sets if sets else ''})",
            ]
        )
    else:
        print_lines(["", f"{reading.path}: model type {reading.model_type}"])

    def shown(value) -> str:
        text = json.dumps(value) if not isinstance(value, str) or not value.startswith("<") else value
        return text if len(text) <= 40 else text[:37] + "..."

    rows = []
    for key in reading.keys:
        what = key.disposition + (f" as {key.archzoo_key}" if key.archzoo_key else "")
        rows.append([key.key, shown(key.to_dict()["value"]), what, key.detail])
    for key, value in reading.overrides.items():
        rows.append([f"--set {key}", shown(value), "read", "given on the command line; replaces what the file gives"])
    print_table(
        [
            Column("key", min_width=12),
            Column("value", min_width=10, drop=2),
            Column("disposition", min_width=10, drop=3),
            Column("why", min_width=12, wrap=True, drop=1),
        ],
        rows,
    )


@cli.command(
    epilog="""\b
Examples:
  archzoo plugins                       plugins, architectures, every key with its default, shipped registries
  archzoo plugins --check               run every plugin's self-checks (exit 1 if any finds a problem)
  ARCHZOO_PLUGINS=gpt archzoo plugins   load only the gpt plugin
  archzoo --strict plugins              fail if any plugin cannot be loaded
"""
)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option(
    "--check",
    is_flag=True,
    help="Run each plugin's self-checks (archzoo.testing.check_plugin: hooks, configuration model, default "
    "build, reference, Hugging Face tables, registry entries) and print its problems; exit 1 if any.",
)
@click.pass_context
def plugins(ctx, as_json, check):
    """List loaded plugins, their architectures and every configuration key with its default."""
    host = _host(ctx)
    if check:
        _check_plugins(ctx, host, as_json)
        return
    data: list[dict[str, Any]] = []
    for info in host.plugins.values():
        archs = []
        for name in info.architectures:
            arch = host.architectures[name]
            archs.append(
                {
                    "name": name,
                    "title": arch.title,
                    "hf_model_types": sorted(arch.hf_model_types),
                    "config": [
                        {"key": k, "type": t, "default": d, "description": desc}
                        for k, t, d, desc in arch.config_fields()
                    ],
                }
            )
        data.append(
            {
                "name": info.name,
                "version": info.version,
                "source": info.source,
                "module": info.module,
                "architectures": archs,
                "registry_dirs": [str(p) for p in info.registry_dirs],
            }
        )
    problems = [{"plugin": p.plugin, "reason": p.reason} for p in host.problems]
    if as_json:
        _emit_json({"plugins": data, "problems": problems})
        return
    from .terminal import Column, print_lines, print_table

    for plugin in data:
        print_lines([f"{plugin['name']} {plugin['version']}  ({plugin['module']}; {plugin['source']})"], style="bold")
        for shown in plugin["architectures"]:
            hf = f"  reads HF model types: {', '.join(shown['hf_model_types'])}" if shown["hf_model_types"] else ""
            print_lines([f"  architecture {shown['name']}: {shown['title']}{hf}"])
            print_table(
                [  # keys and defaults are whole words, never cut: the description wraps around them
                    Column("", min_width=2, drop=1),
                    Column("key", min_width=40),
                    Column("default", min_width=40),
                    Column("description", min_width=16, wrap=True),
                ],
                [["  ", f["key"], "= " + json.dumps(f["default"]), f["description"]] for f in shown["config"]],
                boxed=False,
                header=False,
            )
        for folder in plugin["registry_dirs"]:
            print_lines(
                [
                    f"  ships a registry folder: {folder}  (opt in: --plugin-registry {plugin['name']}, or "
                    f"plugin_registries: [{plugin['name']}] in the site's mkdocs.yml)"
                ]
            )
    for p in problems:
        print_lines([f"not loaded: {p['plugin']}: {p['reason']}"], style="red")


def _check_plugins(ctx: click.Context, host: PluginHost, as_json: bool) -> None:
    """``plugins --check``: each plugin's problems (archzoo.testing.check_plugins); exit 1 if any."""
    from .testing import check_plugins

    results = check_plugins(host)
    failed = [name for name, problems in results.items() if problems]
    if as_json:
        _emit_json(
            {
                "plugins": [{"name": n, "ok": not p, "problems": p} for n, p in results.items()],
                "ok": not failed,
            }
        )
    else:
        for name, problems in results.items():
            if not problems:
                click.echo(f"{name}: ok")
                continue
            click.secho(f"{name}: {len(problems)} problem{'s' if len(problems) > 1 else ''}", fg="red")
            for problem in problems:
                click.echo(f"  - {problem}")
        click.echo(
            f"{len(results) - len(failed)} of {len(results)} plugin(s) pass their self-checks"
            + (f"; {', '.join(failed)} do{'es' if len(failed) == 1 else ''} not" if failed else ""),
            err=True,
        )
    if failed:
        ctx.exit(1)


@cli.command(
    "new-plugin",
    epilog="""\b
Examples:
  archzoo new-plugin tiny_lm                 writes ./archzoo-tiny-lm (module archzoo_tiny_lm, entry point tiny_lm)
  archzoo new-plugin tiny_lm --dir plugins/tiny
""",
)
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path),
    help="Where to write the package (new or empty; default ./archzoo-NAME).",
)
@click.pass_context
def new_plugin_command(ctx, name, directory):
    """Scaffold an architecture plugin package NAME: pyproject.toml with its entry point, the module (a
    configuration model, blocks mapped to a reference torch module), an example registry entry, a
    conformance test written with archzoo.testing, and a README of the next steps. Nothing is overwritten."""
    from .scaffold import new_plugin

    target, files = new_plugin(name, directory, _host(ctx))
    for path in files:
        click.echo(target / path)
    click.echo(
        f"plugin {name!r} written to {target}: next, `pip install -e {target}` (with torch for its tests), "
        f"then `pytest {target}`, `archzoo plugins` and `archzoo count {name}`; its README.md says more",
        err=True,
    )


# ---- the registry ---------------------------------------------------------------------------------

registry_option = click.option(
    "--registry",
    "registry_dirs",
    multiple=True,
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    help="Registry folder (repeatable; default: $ARCHZOO_REGISTRY, else ./registry).",
)
plugin_registry_option = click.option(
    "--plugin-registry",
    "plugin_registries",
    multiple=True,
    metavar="PLUGIN|all",
    help="Also read the registry folder this installed plugin ships (repeatable; 'all' for every plugin's; "
    "`archzoo plugins` lists them). Plugins' entries are never included unasked.",
)


def _warn_plugin_entries(registry) -> None:
    """A broken entry in a folder a plugin ships is the plugin's problem: one warning per plugin."""
    by_plugin: dict[str, list] = {}
    for problem in registry.plugin_problems:
        by_plugin.setdefault(problem.plugin, []).append(problem)
    for plugin, problems in by_plugin.items():
        first = problems[0]
        click.echo(
            f"archzoo: warning: plugin {plugin!r} ships {len(problems)} registry problem(s), skipped; the "
            f"first: {first.path}:{first.line}: {first.key + ': ' if first.key else ''}{first.message}",
            err=True,
        )


def _index(ctx: click.Context, dirs: tuple[Path, ...], plugin_registries: tuple[str, ...] = ()):
    """Every entry's row, from the registry index (each unchanged file's row comes from the cache)."""
    from .registry_index import load_index

    index = load_index(list(dirs) or None, _host(ctx), plugin_registries=plugin_registries)
    if index.problems:
        where = " ".join(str(d) for d in dirs)
        click.echo(
            f"archzoo: warning: {len(index.problems)} registry problem(s) skipped; "
            f"`archzoo validate{' ' + where if where else ''}` lists them",
            err=True,
        )
    _warn_plugin_entries(index)
    if not len(index) and not index.problems:
        from .registry import default_registry_dirs

        searched = ", ".join(str(d) for d in (list(dirs) or default_registry_dirs())) or "nothing found to search"
        raise ArchzooError(f"the registry is empty (searched: {searched}); give --registry DIR or set ARCHZOO_REGISTRY")
    return index


def _find(ctx: click.Context, dirs: tuple[Path, ...], model_id: str, plugin_registries: tuple[str, ...] = ()):
    """One entry, reading only its own file."""
    from .registry import find_model

    return find_model(model_id, list(dirs) or None, _host(ctx), plugin_registries=plugin_registries)


def _list_columns():
    from .terminal import Column

    return (
        Column("id", min_width=12),
        Column("arch", min_width=4, drop=1),
        Column("params", numeric=True, drop=2),
        Column("exact", numeric=True),
        Column("published", numeric=True, drop=3),
        Column("difference", numeric=True, drop=5),
        Column("status", min_width=10, drop=4),
    )


@cli.command(
    "list",
    epilog="""\b
Examples:
  archzoo list                       every model, by name
  archzoo list 'gpt2*' --sort params
  archzoo list --arch vit --json
""",
)
@click.argument("pattern", default="*", metavar="[PATTERN]")
@click.option("--arch", "architecture", help="Only models of this architecture.")
@click.option("--sort", "sort_key", type=click.Choice(["name", "params", "year"]), default="name", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print as CSV.")
@registry_option
@plugin_registry_option
@click.pass_context
def list_models(ctx, pattern, architecture, sort_key, as_json, as_csv, registry_dirs, plugin_registries):
    """List registry models whose id contains PATTERN, or matches it as a glob (`gpt2*`, `*-base-*`): exact and
    published sizes, and the difference.

    On a narrow terminal the id and status columns shrink (ending in …), and columns are left out in
    this order: arch, params, published, status, difference; the exact count stays. Piped output has
    every column, one model a line.
    """
    if architecture:
        _host(ctx).architecture(architecture)  # an unknown name is an error that names the loaded ones
    import fnmatch

    index = _index(ctx, registry_dirs, plugin_registries)
    glob = any(c in pattern for c in "*?[")
    found = [
        r
        for r in index.rows.values()
        if (fnmatch.fnmatchcase(r.id, pattern) if glob else pattern in r.id)
        and (architecture is None or r.architecture == architecture)
    ]
    key = {"name": lambda r: r.id, "params": lambda r: (r.params, r.id), "year": lambda r: (r.year, r.id)}[sort_key]
    from .site.records import list_record

    rows = [list_record(r) for r in sorted(found, key=key)]
    if as_json:
        _emit_json_rows(rows)
        return
    if as_csv:
        import csv

        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["id"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return
    if not rows:
        raise ArchzooError(_no_match(pattern, glob, architecture, index))
    from .terminal import print_table

    print_table(
        _list_columns(),
        [
            [
                r["id"],
                r["architecture"],
                r["params_human"],
                f"{r['params']:,}",
                r["published"] or "-",
                f"{r['difference_pct']:+.2f}%" if r["difference_pct"] is not None else "-",
                r["status"] + (f" ({r['reason']})" if r["reason"] else ""),
            ]
            for r in rows
        ],
    )


def _no_match(pattern: str, glob: bool, architecture: str | None, index) -> str:
    """Why nothing matched, and what would: the glob that finds a pattern anywhere in an id, else the
    closest ids."""
    import fnmatch

    from .errors import closest

    where = f" in architecture {architecture!r}" if architecture else ""
    ids = [r.id for r in index.rows.values() if architecture is None or r.architecture == architecture]
    if glob:
        anywhere = "*" + pattern.strip("*") + "*"
        if anywhere != pattern and any(fnmatch.fnmatchcase(i, anywhere) for i in ids):
            return (
                f"no model matches {pattern!r}{where} (a glob matches whole ids); {anywhere!r} finds it "
                "anywhere in an id"
            )
    hint = closest(pattern.strip("*?[]"), [r.id for r in index.rows.values()])
    return f"no model matches {pattern!r}{where}" + (
        f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
    )


def _entry_report(entry, seq_len: int | None):
    """The entry's report, at ``--seq-len`` when one is given."""
    if seq_len is None:
        return entry.report
    from .report import make_report

    return make_report(entry.architecture, entry.config, seq_len, seq_len_name="--seq-len")


def _entry_dict(entry, seq_len: int | None, units: str = "flops") -> dict[str, Any]:
    from .report_json import report_dict

    report = _entry_report(entry, seq_len)
    spec = entry.spec
    data = {
        "id": entry.id,
        "path": str(entry.path),
        **spec.model_dump(mode="json", exclude={"config"}),
    }
    data.update(entry.figures())
    data["report"] = report_dict(report, units)
    return data


@cli.command(
    epilog="""\b
Examples:
  archzoo show bert-base-uncased
  archzoo show gpt2 --seq-len 256 --depth 2
  archzoo show vit-base-patch16-224 --json
"""
)
@click.argument("model_id")
@click.option("--seq-len", type=int, help="Sequence length N for FLOPs (default: the model's context).")
@click.option(
    "--depth", type=click.IntRange(min=0), default=3, show_default=True, help="Levels of the block tree to show."
)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON: the entry, plus its report (archzoo.report/1).")
@units_option
@memory_option
@registry_option
@plugin_registry_option
@click.pass_context
def show(ctx, model_id, seq_len, depth, as_json, units, show_memory, registry_dirs, plugin_registries):
    """Show one registry model: published figure and source, reconciliation, and the full report."""
    entry = _find(ctx, registry_dirs, model_id, plugin_registries)
    if as_json:
        _emit_json(_entry_dict(entry, seq_len, units))
        return
    from .terminal import print_lines, print_report, published_lines

    spec = entry.spec
    print_lines([f"{entry.id}: {spec.title} ({spec.year})"], style="bold")
    print_lines([spec.summary, f"registry file: {entry.path}", *published_lines(entry), ""])
    report = _entry_report(entry, seq_len)
    print_report(report, max_depth=depth, units=units)
    if show_memory:
        _print_peaks(report)


@cli.command(
    epilog="""\b
Examples:
  archzoo compare bert-base-uncased roberta-base distilbert-base-uncased
  archzoo compare gpt2 gpt2-medium --seq-len 256
"""
)
@click.argument("model_ids", nargs=-1, required=True)
@click.option("--depth", type=click.IntRange(min=1), default=2, show_default=True, help="Block levels to compare.")
@click.option(
    "--seq-len",
    type=int,
    help="Sequence length N of every model's FLOPs (default: the shortest of the models' own contexts, so that "
    "all run at the same N; an image model's N is set by its configuration).",
)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@registry_option
@plugin_registry_option
@click.pass_context
def compare(ctx, model_ids, depth, seq_len, as_json, registry_dirs, plugin_registries):
    """Compare models side by side, block by block: what differs and by how much.

    Each Δ column is the model to its left minus the first model; a block that neither has shows no
    difference. On a narrow terminal the block names shrink (ending in …), the Δ columns are left out
    (the last first), then the models after the first two.
    """
    if len(model_ids) < 2:
        raise click.UsageError("give at least two model ids to compare")
    entries = [_find(ctx, registry_dirs, m, plugin_registries) for m in model_ids]
    reports, same_n = _compare_reports(entries, seq_len)
    paths: list[str] = []
    values: dict[str, dict[str, int]] = {}
    for entry, report in zip(entries, reports, strict=True):
        values[entry.id] = {}
        for visit in report.root.visits():  # parameters of all stored copies, as every report gives them
            if visit.depth > depth:
                continue
            path = visit.path.split(".", 1)[1] if "." in visit.path else "(total)"
            if path not in paths:
                paths.append(path)
            values[entry.id][path] = visit.params.evaluate()
    first = entries[0].id
    rows = []
    for path in paths:
        row: dict[str, Any] = {"block": path, **{e.id: values[e.id].get(path) for e in entries}}
        base = values[first].get(path)
        row["differs"] = len({values[e.id].get(path) for e in entries}) > 1
        row["delta_vs_first"] = {e.id: _difference(base, values[e.id].get(path)) for e in entries[1:]}
        rows.append(row)
    if as_json:
        later = list(zip(entries[1:], reports[1:], strict=True))
        _emit_json(
            {
                "models": [e.id for e in entries],
                "blocks": rows,
                "active_params": {e.id: r.active_params for e, r in zip(entries, reports, strict=True)},
                "active_params_delta_vs_first": {e.id: r.active_params - reports[0].active_params for e, r in later},
                "flops": {
                    e.id: {
                        "seq_len": r.seq_len,
                        "forward": r.flops,
                        "delta_vs_first": None if r is reports[0] else r.flops - reports[0].flops,
                    }
                    for e, r in zip(entries, reports, strict=True)
                },
                "seq_len": reports[0].seq_len if same_n else None,
            }
        )
        return
    from .terminal import Column, fits, print_lines, print_table

    def cell(v: int | None) -> str:
        return "-" if v is None else f"{v:,}"

    def delta(base: int | None, other: int | None) -> str:
        d = _difference(base, other)
        return "" if d is None else ("same" if d == 0 and base is not None else f"{d:+,}")

    def columns(headers: list[str]) -> list[Column]:
        shown = [Column("block", min_width=12)]
        for i, (entry, header) in enumerate(zip(entries, headers, strict=True)):
            shown.append(Column(header, numeric=True, drop=None if i < 2 else 2 * len(entries) - i, name=entry.id))
            if i:
                shown.append(Column("Δ", numeric=True, drop=len(entries) - i, name=f"Δ of {entry.id}"))
        return shown

    table_rows = []

    def add(name: str, figures: list[int | None]) -> None:
        row = [name, cell(figures[0])]
        for figure in figures[1:]:
            row += [cell(figure), delta(figures[0], figure)]
        table_rows.append(row)

    for row in rows:
        add(row["block"], [row[e.id] for e in entries])
    if any(r.active_params != r.params for r in reports):  # a mixture of experts among them
        add("active parameters", [r.active_params for r in reports])
    add("forward FLOPs", [r.flops for r in reports])
    shown = columns([e.id for e in entries])
    if not fits(shown, table_rows):  # the ids make the columns too wide: letters, with a legend
        letters = [chr(ord("A") + i) if i < 26 else f"#{i + 1}" for i in range(len(entries))]
        shown = columns(letters)
        print_lines([f"{letter} = {e.id}" for letter, e in zip(letters, entries, strict=True)])
    print_table(shown, table_rows)
    if same_n:
        own = {e.report.seq_len for e in entries}
        how = (
            "--seq-len"
            if seq_len is not None
            else ("each model's own" if len(own) == 1 else "the shortest of the models' own contexts")
        )
        print_lines([f"forward FLOPs of every model at N = {reports[0].seq_len:,} ({how})"], style="dim")
    else:
        each = ", ".join(f"{e.id} at N = {r.seq_len:,}" for e, r in zip(entries, reports, strict=True))
        print_lines(
            [f"forward FLOPs at each model's own N, which an image model's configuration sets: {each}"], style="dim"
        )


def _difference(base: int | None, other: int | None) -> int | None:
    """``other - base``, a missing block counting as 0; None when neither model has the block."""
    if base is None and other is None:
        return None
    return (other or 0) - (base or 0)


def _compare_reports(entries, seq_len: int | None):
    """Every entry's report at one N: ``--seq-len``, else the shortest of their own contexts. When an
    image model's fixed N makes one N impossible (and none was asked for), each at its own N. Returns
    the reports and whether they share N."""
    from .report import make_report

    def at(n: int | None):
        reports = []
        for entry in entries:
            try:
                reports.append(make_report(entry.architecture, entry.config, n, seq_len_name="--seq-len"))
            except ConfigError as exc:
                raise ConfigError(f"{entry.id}: {exc}") from None
        return reports

    if seq_len is not None:
        return at(seq_len), True
    own = [entry.report.seq_len for entry in entries]
    if len(set(own)) == 1:
        return [entry.report for entry in entries], True
    try:
        return at(min(own)), True
    except ConfigError:
        return [entry.report for entry in entries], False


@cli.command(
    epilog="""\b
Examples:
  archzoo validate                        the whole registry
  archzoo validate registry/gpt my-model.yaml
  archzoo validate --plugin-registry all  your registry and every plugin's shipped entries
"""
)
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@plugin_registry_option
@click.pass_context
def validate(ctx, paths, plugin_registries):
    """Check registry files and report every problem as path:line: key: message (exit 1 if any)."""
    from .registry import default_registry_dirs, load_registry

    targets = list(paths) or default_registry_dirs()
    if not targets:
        raise ArchzooError("no registry folder found: give PATHS, set ARCHZOO_REGISTRY, or run where ./registry exists")
    registry = load_registry(targets, _host(ctx), plugin_registries=plugin_registries)
    if not len(registry) and not registry.problems:
        raise ArchzooError(f"no registry entries (*.yaml) found in {', '.join(str(t) for t in targets)}")
    for warning in registry.warnings:
        click.echo(f"{warning} (warning)", err=True)
    for problem in registry.plugin_problems:
        click.echo(f"{problem} (warning: skipped, not counted as a problem of yours)", err=True)
    for problem in registry.problems:
        click.echo(str(problem), err=True)
    broken = len({p.path for p in registry.problems})
    if registry.problems:
        click.echo(f"{len(registry.problems)} problem(s) in {broken} of {len(registry) + broken} file(s)", err=True)
        ctx.exit(1)
    click.echo(f"{len(registry)} entr{'y' if len(registry) == 1 else 'ies'} valid")


@cli.command(
    epilog="""\b
Examples:
  archzoo schema > registry-entry.json
  archzoo schema --out src/archzoo/site/docs/schema/registry-entry.json
"""
)
@click.option("--out", type=click.Path(path_type=Path), help="Write to this file instead of standard output.")
def schema(out):
    """Print the JSON Schema of a registry entry (editors use it through the yaml-language-server line)."""
    from .registry import entry_json_schema

    text = json.dumps(entry_json_schema(), indent=2) + "\n"
    if out is None:
        click.echo(text, nl=False)
        return
    if out.is_dir():
        raise ArchzooError(f"--out {out}: is a folder; give a file name such as {out / 'registry-entry.json'}")
    if not out.parent.is_dir():
        raise ArchzooError(f"--out {out}: folder {out.parent} does not exist; create it first")
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ArchzooError(f"--out {out}: cannot write ({exc.strerror or exc})") from None
    click.echo(f"wrote {out}", err=True)


@cli.command(
    "verify",
    epilog="""\b
Examples:
  archzoo verify bert-base-uncased
  archzoo verify registry/gpt/gpt2.yaml --json
  archzoo verify my-model.yaml            a file that is not in any registry folder
""",
)
@click.argument("target", metavar="ID|FILE")
@click.option(
    "--json", "as_json", is_flag=True, help="Print as JSON: the reference, both totals and one record per mapped block."
)
@registry_option
@plugin_registry_option
@click.pass_context
def verify_command(ctx, target, as_json, registry_dirs, plugin_registries):
    """Check an entry against its real implementation (torch / transformers on the meta device), in total
    and block by block; exit 1 if anything differs. Needs the verify extra (torch, transformers)."""
    from .verify import verify_target

    result = verify_target(target, list(registry_dirs) or None, _host(ctx), plugin_registries=plugin_registries)
    if as_json:
        _emit_json(result.to_json())
    else:
        from .terminal import print_lines

        print_lines(result.render().splitlines())
    if not result.ok:
        ctx.exit(1)


@cli.command(
    epilog="""\b
Examples:
  archzoo checkpoint ./my-model/              the folder's config.json says what the tensors should be
  archzoo checkpoint model.safetensors.index.json --model mixtral-8x7b
  archzoo checkpoint model.safetensors --hf-config config.json --hf-class LlamaForCausalLM --json
  archzoo checkpoint model.safetensors        no configuration: the tensors by dtype only
""",
)
@click.argument("path", metavar="PATH", type=click.Path(path_type=Path))
@click.option("--model", "model_id", metavar="ID", help="Compare with this registry entry's configuration.")
@click.option(
    "--hf-config",
    type=click.Path(path_type=Path),
    help="Compare with this config.json (default: the one beside the checkpoint, if any).",
)
@click.option("--hf-class", help="The class the checkpoint was saved from (default: auto, the file's architectures).")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON: the tensors by dtype, both totals, every block.")
@registry_option
@plugin_registry_option
@click.pass_context
def checkpoint(ctx, path, model_id, hf_config, hf_class, as_json, registry_dirs, plugin_registries):
    """Read a .safetensors checkpoint (or a sharded one's index, or their folder) from its headers alone, count
    its tensors by dtype, and compare them with archzoo's count, in total and block by block: exit 1 if they
    differ. No weights are loaded and torch is not needed (the checkpoint extra installs safetensors)."""
    from .checkpoint import as_json as checkpoint_json
    from .checkpoint import compare_checkpoint, read_checkpoint

    if model_id is not None and hf_config is not None:
        raise ArchzooError("--model and --hf-config each give the configuration; give one of them")
    folder = path if path.is_dir() else path.parent
    if model_id is None and hf_config is None and (folder / "config.json").is_file():
        hf_config = folder / "config.json"
    if hf_class is not None and hf_config is None:
        raise ArchzooError("--hf-class goes with --hf-config (or a config.json beside the checkpoint)")
    found = read_checkpoint(path)
    if model_id is not None:
        entry = _find(ctx, registry_dirs, model_id, plugin_registries)
        arch, config, source = entry.architecture, entry.config, f"registry entry {entry.id}"
    elif hf_config is not None:
        from .hf_config import load_hf_config

        reading = load_hf_config(hf_config, _host(ctx), hf_class=hf_class or "auto")
        arch, config, source = reading.architecture, reading.config, f"{hf_config} as {reading.model_class}"
    else:
        data = checkpoint_json(found)
        if as_json:
            _emit_json(data)
            return
        from .checkpoint import refused_lines
        from .terminal import printable

        # every text here comes from the file (its path, dtypes, tensor names): shown through the one cleaner,
        # and the refused tensors summarised a line a reason, so no file can flood or steer the terminal
        lines = [
            f"{printable(str(found.source))}: {data['tensors']:,} tensors, {data['elements']:,} elements, "
            f"{data['bytes']:,} bytes"
        ]
        for dtype, figures in data["by_dtype"].items():
            lines.append(f"  {printable(dtype)}: {figures['tensors']:,} tensors, {figures['elements']:,} elements")
        if data["unpacked"] or data["quantisation_side_tensors"] or data["refused"]:
            lines.append(
                f"parameters: {data['parameters']:,} ({len(data['unpacked']):,} quantised weights counted unpacked, "
                f"{len(data['quantisation_side_tensors']):,} quantisation side tensors left out)"
            )
            lines += ["  " + line for line in refused_lines(data["refused"])]
        click.echo("\n".join(lines))
        click.echo("give --model ID or --hf-config FILE to compare them with archzoo's count", err=True)
        return
    result = compare_checkpoint(found, arch, config)
    if as_json:
        _emit_json({**checkpoint_json(found), "configuration": source, "comparison": result.to_json()})
    else:
        from .terminal import print_lines

        print_lines([f"configuration: {source}", *result.render().splitlines()])
    if not result.ok:
        ctx.exit(1)


# ---- the site -------------------------------------------------------------------------------------


@cli.command(
    epilog="""\b
Examples:
  archzoo init acme-zoo
  archzoo init . --title "Acme model zoo" --site-url https://acme.github.io/zoo/
"""
)
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--title", help="The site's name (default: '<folder name> model zoo').")
@click.option("--description", help="One line about the zoo: the site's description, under the README's title.")
@click.option(
    "--site-url",
    metavar="URL",
    help="Where the site will be published, e.g. https://acme.github.io/zoo/ (the example entries' "
    "$schema line then points at URL/schema/registry-entry.json; default: this installation's "
    "schema file).",
)
@click.pass_context
def init(ctx, directory, title, description, site_url):
    """Scaffold a model-zoo repository in DIRECTORY (new or empty): mkdocs.yml, one example entry per
    architecture, an About page, a README and a GitHub Pages workflow. Nothing is ever overwritten."""
    from .init import init_zoo

    files = init_zoo(
        directory,
        _host(ctx),
        title=title,
        description=description,
        site_url=site_url,
        progress=lambda line: click.echo(f"archzoo: warning: {line}", err=True),
    )
    for path in files:
        click.echo(directory / path)
    click.echo(
        f"zoo written to {directory}: next, cd there and run `archzoo serve` (pip install 'archzoo[site]' first)",
        err=True,
    )


def site_options(func):
    """The options that override a site's configuration (its mkdocs.yml), shared by build and serve."""
    options = [
        click.option(
            "--config-file",
            type=click.Path(path_type=Path),
            metavar="MKDOCS_YML",
            help="The zoo's MkDocs configuration (default: ./mkdocs.yml; without one, a default site of --registry).",
        ),
        click.option(
            "--registry",
            "registry_dirs",
            multiple=True,
            type=click.Path(path_type=Path, exists=True),
            help="Registry folder (repeatable); replaces the `registry` the configuration lists "
            "(without a mkdocs.yml: default $ARCHZOO_REGISTRY, else ./registry).",
        ),
        click.option(
            "--plugin-registry",
            "plugin_registries",
            multiple=True,
            metavar="PLUGIN|all",
            help="Also publish the entries this installed plugin ships (repeatable; 'all' for every one).",
        ),
        click.option("--title", help="The site's title (mkdocs.yml: site_name)."),
        click.option("--description", help="One line under the title (mkdocs.yml: site_description)."),
        click.option(
            "--site-url",
            metavar="URL",
            help="Where the site is published (mkdocs.yml: site_url); "
            "entries' $schema can then point at URL/schema/registry-entry.json.",
        ),
        click.option(
            "--repo-url",
            metavar="URL",
            help="The zoo's repository (mkdocs.yml: repo_url); edit links open files there.",
        ),
        click.option(
            "--edit-pattern",
            metavar="PATTERN",
            help="Edit link of a file; {repo_url} and {path} (its path in the repository) are filled "
            "in (default: REPO_URL/edit/main/{path}; an http(s) address).",
        ),
        click.option(
            "--pages",
            metavar="NAME,...",
            help="archzoo's own pages to publish, comma-separated, from: methodology, writing-entries, "
            "writing-plugins, performance ('none' for none).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _site_options(registry_dirs, plugin_registries, title, description, site_url, repo_url, edit_pattern, pages):
    from .site import SiteOptions

    chosen = None
    if pages is not None:
        from .site.plugin import PAGES

        chosen = tuple(p.strip() for p in pages.split(",") if p.strip() and p.strip() != "none")
        unknown = [p for p in chosen if p not in PAGES]
        if unknown:
            raise click.BadParameter(
                f"unknown page {unknown[0]!r}; expected some of {', '.join(PAGES)} (or 'none')", param_hint="--pages"
            )
    return SiteOptions(
        title=title,
        description=description,
        site_url=site_url,
        repo_url=repo_url,
        edit_pattern=edit_pattern,
        pages=chosen,
        registry=tuple(registry_dirs) or None,
        plugin_registries=tuple(plugin_registries) or None,
    )


def _say(line: str) -> None:
    click.echo(line, err=True)


@cli.command(
    epilog="""\b
Examples:
  archzoo build                                  the zoo of ./mkdocs.yml into ./site
  archzoo build --out public --site-url https://acme.github.io/zoo/ --repo-url https://github.com/acme/zoo
  archzoo build --registry ~/models --title "Acme models"   a registry folder, no mkdocs.yml needed
  mkdocs build --strict                          the same build, by MkDocs itself
"""
)
@site_options
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("site"),
    show_default=True,
    help="Output folder; replaced only when the build succeeds, and only if it is empty or a site archzoo built.",
)
def build(
    config_file, registry_dirs, plugin_registries, title, description, site_url, repo_url, edit_pattern, pages, out
):
    """Build the zoo's site: a page per model and architecture, the all-models table, archzoo's guides.

    The site is configured in the zoo's mkdocs.yml (`archzoo init DIR` makes one); the options here
    override it for one build.
    """
    from .site import build_site

    options = _site_options(
        registry_dirs, plugin_registries, title, description, site_url, repo_url, edit_pattern, pages
    )
    path = build_site(out, config_file=config_file, options=options, progress=_say)
    click.echo(f"site written to {path}")


@cli.command(
    epilog="""\b
Examples:
  archzoo serve                       the zoo of ./mkdocs.yml on http://127.0.0.1:8000/
  archzoo serve --registry ~/models --port 8080
"""
)
@site_options
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--host", "address", default="127.0.0.1", show_default=True)
def serve(
    config_file,
    registry_dirs,
    plugin_registries,
    title,
    description,
    site_url,
    repo_url,
    edit_pattern,
    pages,
    port,
    address,
):
    """Preview the site with live reload: it rebuilds when a registry file, docs/ or mkdocs.yml changes.

    A rebuild that fails shows its error (file:line) in the browser instead of the site, until the
    file is saved again.
    """
    from .site import serve_site

    options = _site_options(
        registry_dirs, plugin_registries, title, description, site_url, repo_url, edit_pattern, pages
    )
    serve_site(config_file=config_file, options=options, host=address, port=port, say=_say)


def main(argv: list[str] | None = None) -> int:
    """Entry point: user mistakes print one clear error and exit 1, never a traceback."""
    try:
        code = cli.main(args=argv, prog_name="archzoo", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("archzoo: aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except ArchzooError as exc:
        from .terminal import printable

        # a message may quote a file's text (a tensor name, a key): no escape sequence of it reaches the terminal
        click.echo(f"archzoo: error: {printable(str(exc), one_line=False)}", err=True)
        return 1
    except BrokenPipeError:
        return 0
    except SystemExit as exc:  # rich exits 1 on a closed pipe (`archzoo list | head`); that is not an error
        if isinstance(exc.__context__, BrokenPipeError):
            return 0
        raise
    return code if isinstance(code, int) else 0  # ctx.exit(N) comes back as N without standalone mode


if __name__ == "__main__":
    sys.exit(main())
