"""Every output archzoo makes from the shipped registry, reduced to one SHA-256 per output: the guard that a
refactor changes no report, page or JSON document.

An output is named by what makes it: ``show <id> --json``, ``show <id>`` and ``show <id> --memory`` in an
80-column terminal for every registry entry, ``count <arch> --json`` of every architecture's defaults,
``plugins --json``, and every file of ``archzoo build`` (``site/<path>``). Builds run with a fresh cache
folder, so a cached page can never stand in for a generated one.

    python tests/output_snapshot.py                 write tests/data/outputs.sha256.json anew
    python tests/output_snapshot.py --check         compare with it, print what differs, exit 1 if anything does
    python tests/output_snapshot.py --out FILE      write the snapshot to FILE instead

Regenerate the file when a change is meant to change outputs (a new entry, a new page), and say so in the commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "tests" / "data" / "outputs.sha256.json"

#: Files of a build that hold the moment or the machine of the build, not what archzoo made of the registry.
_VOLATILE = ("sitemap.xml.gz",)


#: Where the registry lives on this machine, as outputs print it (an entry's path): written as <registry> before
#: hashing, so a checkout anywhere records the same outputs.
_PLACES: list[tuple[bytes, bytes]] = []


def _digest(data: bytes) -> str:
    for place, name in _PLACES:
        data = data.replace(place, name)
    return hashlib.sha256(data).hexdigest()


def _invoke(args: list[str]) -> bytes:
    from click.testing import CliRunner

    from archzoo.cli import cli

    result = CliRunner().invoke(cli, args, env={"COLUMNS": "80", "NO_COLOR": "1"}, catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(f"archzoo {' '.join(args)} exited {result.exit_code}:\n{result.output}")
    return result.stdout_bytes


def snapshot(registry: Path) -> dict[str, str]:
    """SHA-256 of every output archzoo makes from ``registry`` (a folder of entries)."""
    os.environ["ARCHZOO_CACHE_DIR"] = tempfile.mkdtemp(prefix="archzoo-snapshot-cache-")
    from archzoo.host import get_host
    from archzoo.registry import load_registry

    _PLACES[:] = [(str(registry.resolve()).encode(), b"<registry>"), (str(registry).encode(), b"<registry>")]
    reg = ["--registry", str(registry)]
    outputs: dict[str, str] = {}
    for entry in sorted(load_registry([registry]), key=lambda e: e.id):
        outputs[f"show {entry.id} --json"] = _digest(_invoke(["show", entry.id, "--json", *reg]))
        outputs[f"show {entry.id}"] = _digest(_invoke(["show", entry.id, *reg]))
        outputs[f"show {entry.id} --memory"] = _digest(_invoke(["show", entry.id, "--memory", *reg]))
    for name in sorted(get_host().architectures):
        outputs[f"count {name} --json"] = _digest(_invoke(["count", name, "--json"]))
    outputs["plugins --json"] = _digest(_invoke(["plugins", "--json"]))
    with tempfile.TemporaryDirectory(prefix="archzoo-snapshot-site-") as tmp:
        site = Path(tmp) / "site"
        _invoke(["build", *reg, "--out", str(site)])
        for path in sorted(p for p in site.rglob("*") if p.is_file()):
            rel = path.relative_to(site).as_posix()
            if rel not in _VOLATILE:
                outputs[f"site/{rel}"] = _digest(path.read_bytes())
    return outputs


def differences(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """One line per output that is new, gone or changed."""
    lines = [f"changed: {k}" for k in sorted(old.keys() & new.keys()) if old[k] != new[k]]
    lines += [f"gone:    {k}" for k in sorted(old.keys() - new.keys())]
    lines += [f"new:     {k}" for k in sorted(new.keys() - old.keys())]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the snapshot; exit 1 on a difference")
    parser.add_argument("--out", type=Path, default=SNAPSHOT, help="snapshot file (default: %(default)s)")
    parser.add_argument("--registry", type=Path, default=ROOT / "registry", help="registry folder")
    args = parser.parse_args(argv)
    new = snapshot(args.registry)
    if args.check:
        lines = differences(json.loads(args.out.read_text()), new)
        print("\n".join(lines) or f"all {len(new)} outputs unchanged")
        return 1 if lines else 0
    args.out.write_text(json.dumps(new, indent=1, sort_keys=True) + "\n")
    print(f"{len(new)} outputs written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
