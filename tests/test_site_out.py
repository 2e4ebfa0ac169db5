"""Where `build_site` writes: ``--out`` is replaced only when archzoo built it, and a killed build's
staging and temporary folders are removed by the next build, never those of a build still running.

Each case of the hostile-input corpus is one test marked ``hostile``. The builds use a one-entry
registry (a copy of bert-base-uncased), about a second each.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from archzoo.errors import ArchzooError
from archzoo.site import build_site
from plugin_selection import only_plugins

REPO = Path(__file__).resolve().parents[1]
BERT_BASE = REPO / "registry" / "bert" / "bert-base-uncased.yaml"
GPT2_YAML = (Path(__file__).parent / "data" / "gpt2-small-test.yaml").read_text(encoding="utf-8")

NOT_A_SITE = (
    "--out {out}: a folder that holds something other than a built site (no .archzoo-site marker: "
    "archzoo did not build it); give an empty or new folder such as ./site, or remove this one first "
    "if it is a site you no longer need"
)
BAD_MARKER = (
    "--out {out}: {marker}:{line}: {problem}; archzoo did not write this marker, so the folder is not "
    "taken for a site: give an empty or new folder such as ./site, or remove this one first if it is a "
    "site you no longer need"
)
FOREIGN = (
    "--out {out}: holds {what} that archzoo did not write there ({shown}), which replacing the site would "
    "delete; move them out, or give another folder for the site"
)


def _snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder``: a file's bytes hash, a link's target, a folder, anything else's kind."""
    result: dict[str, tuple] = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            mode = path.lstat().st_mode
            rel = path.relative_to(folder).as_posix()
            if stat.S_ISLNK(mode):
                result[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(mode):
                result[rel] = ("folder",)
            elif stat.S_ISREG(mode):
                result[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                result[rel] = ("special", stat.S_IFMT(mode))
    return result


def _user_folder(folder: Path) -> Path:
    """A user's working folder that happens to hold an index.html."""
    (folder / "photos").mkdir(parents=True)
    (folder / "index.html").write_text("<h1>My homepage</h1>\n", encoding="utf-8")
    (folder / "thesis.tex").write_text("\\documentclass{book}\n% four years of work\n", encoding="utf-8")
    (folder / "photos" / "cat.jpg").write_bytes(bytes(range(256)) * 4)
    return folder


def _staging_folders(parent: Path) -> list[Path]:
    return sorted(p for p in parent.iterdir() if ".building-" in p.name)


def _one_entry_registry(folder: Path) -> Path:
    """``folder``, made, holding a copy of bert-base-uncased."""
    folder.mkdir()
    shutil.copy(BERT_BASE, folder / "bert-base-uncased.yaml")
    return folder


@pytest.fixture(scope="module", autouse=True)
def _zoo_plugins():
    """Where a build writes does not depend on how many architectures it publishes: the builds here (and the
    archzoo processes they start) load the plugins of the entries they build alone, a page or two each
    instead of one per installed architecture."""
    with only_plugins("bert", "gpt"):
        yield


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Path:
    return _one_entry_registry(tmp_path_factory.mktemp("registry") / "zoo")


@pytest.fixture(scope="module")
def built(tmp_path_factory, registry) -> Path:
    """A site archzoo built: its marker is the real thing the forged ones imitate."""
    return build_site(tmp_path_factory.mktemp("built") / "site", registry=[registry])


def _refused(out: Path, registry: Path) -> str:
    with pytest.raises(ArchzooError) as info:
        build_site(out, registry=[registry])
    return str(info.value)


# ---- folders archzoo did not build are refused, untouched -------------------------------------------


@pytest.mark.hostile
def test_folder_with_an_index_html_is_not_a_site(tmp_path, registry):
    work = _user_folder(tmp_path / "work")
    before = _snapshot(tmp_path)
    assert _refused(work, registry) == NOT_A_SITE.format(out=work)
    assert _snapshot(tmp_path) == before  # every byte kept, and no staging folder beside it


def _marker_lines(built: Path) -> list[str]:
    return (built / ".archzoo-site").read_text(encoding="utf-8").split("\n")


def _forge_garbled(work: Path, built: Path) -> tuple[int, str]:
    (work / ".archzoo-site").write_text("archzoo site v1\nfiles: 1\nindex.html\n", encoding="utf-8")
    return 1, "expected the format line 'archzoo-site 1', got 'archzoo site v1'"


def _forge_empty(work: Path, built: Path) -> tuple[int, str]:
    (work / ".archzoo-site").write_bytes(b"")
    return 1, "expected the format line 'archzoo-site 1', got ''"


def _forge_binary(work: Path, built: Path) -> tuple[int, str]:
    (work / ".archzoo-site").write_bytes(b"\xff\xfe\x00archzoo-site 1\n")
    return 1, "expected the format line 'archzoo-site 1', got '\\udcff\\udcfe\\x00archzoo-site 1'"


def _forge_cut_short(work: Path, built: Path) -> tuple[int, str]:
    text = (built / ".archzoo-site").read_text(encoding="utf-8")
    cut = len(text) // 2
    cut -= text[cut - 1] == "\n"  # mid-line, so that the last line is cut short whatever the marker holds
    (work / ".archzoo-site").write_text(text[:cut], encoding="utf-8")
    lines = text[:cut].split("\n")
    return len(lines), "expected the file to end with a newline (it was cut short)"


def _forge_short_list(work: Path, built: Path) -> tuple[int, str]:
    lines = _marker_lines(built)
    files_line = next(i for i, line in enumerate(lines) if line.startswith("files: "))
    listed = int(lines[files_line].removeprefix("files: "))
    kept = lines[: files_line + 1 + listed - 1]  # the last file name lost
    (work / ".archzoo-site").write_text("\n".join(kept) + "\n", encoding="utf-8")
    return files_line + 1, f"expected {listed:,} file names after 'files: {listed}', got {listed - 1:,}"


def _forge_no_files_line(work: Path, built: Path) -> tuple[int, str]:
    (work / ".archzoo-site").write_text("archzoo-site 1\nbuilt-by: archzoo 0.1.0\n", encoding="utf-8")
    return 2, "expected a 'files: COUNT' line, got the end of the file"


def _forge_prose(work: Path, built: Path) -> tuple[int, str]:
    (work / ".archzoo-site").write_text("archzoo-site 1\nthis folder is my site, please keep it\n", encoding="utf-8")
    return 2, "expected 'key: value' or 'files: COUNT', got 'this folder is my site, please keep it'"


def _forge_bad_count(work: Path, built: Path) -> tuple[int, str]:
    (work / ".archzoo-site").write_text("archzoo-site 1\nfiles: many\nindex.html\n", encoding="utf-8")
    return 2, "expected a count of files, got 'many'"


def _forge_link_to_real_marker(work: Path, built: Path) -> tuple[int, str]:
    (work / ".archzoo-site").symlink_to(built / ".archzoo-site")
    return 1, "expected a regular file, got a symbolic link"


def _forge_fifo(work: Path, built: Path) -> tuple[int, str]:
    os.mkfifo(work / ".archzoo-site")  # opening it for reading would wait for a writer forever
    return 1, "expected a regular file, got a special file"


def _forge_folder(work: Path, built: Path) -> tuple[int, str]:
    (work / ".archzoo-site").mkdir()
    return 1, "expected a regular file, got a folder"


def _forge_huge(work: Path, built: Path) -> tuple[int, str]:
    with open(work / ".archzoo-site", "wb") as handle:  # sparse: no 64 MB written
        handle.write(b"archzoo-site 1\n")
        handle.truncate(64 * 1024 * 1024 + 1)
    return 1, "expected at most 67,108,864 bytes, got 67,108,865"


@pytest.mark.hostile
@pytest.mark.parametrize(
    "forge",
    [
        _forge_garbled,
        _forge_empty,
        _forge_binary,
        _forge_cut_short,
        _forge_short_list,
        _forge_no_files_line,
        _forge_prose,
        _forge_bad_count,
        _forge_link_to_real_marker,
        _forge_fifo,
        _forge_folder,
        _forge_huge,
    ],
    ids=lambda f: f.__name__.removeprefix("_forge_").replace("_", "-"),
)
def test_a_marker_archzoo_did_not_write_is_refused(tmp_path, registry, built, forge):
    work = _user_folder(tmp_path / "work")
    line, problem = forge(work, built)
    before = _snapshot(tmp_path)
    message = _refused(work, registry)
    assert message == BAD_MARKER.format(out=work, marker=work / ".archzoo-site", line=line, problem=problem)
    assert _snapshot(tmp_path) == before


@pytest.mark.hostile
def test_a_real_marker_copied_into_a_users_folder_does_not_make_it_a_site(tmp_path, registry, built):
    """The marker lists every file the build wrote: the user's own files are not on the list."""
    work = _user_folder(tmp_path / "work")
    shutil.copy(built / ".archzoo-site", work / ".archzoo-site")
    before = _snapshot(tmp_path)
    assert _refused(work, registry) == FOREIGN.format(out=work, what="2 entries", shown="photos/, thesis.tex")
    assert _snapshot(tmp_path) == before


@pytest.mark.hostile
def test_a_site_a_user_added_files_to_is_refused(tmp_path, registry, built):
    site = tmp_path / "site"
    shutil.copytree(built, site)
    (site / "models" / "notes.md").write_text("my notes\n", encoding="utf-8")
    (site / "drafts" / "deep").mkdir(parents=True)
    (site / "drafts" / "deep" / "draft.txt").write_text("draft\n", encoding="utf-8")
    (site / "CNAME").write_text("zoo.example.org\n", encoding="utf-8")
    (site / "link-to-home").symlink_to(tmp_path)
    before = _snapshot(tmp_path)
    assert _refused(site, registry) == FOREIGN.format(
        out=site, what="4 entries", shown="CNAME, drafts/, link-to-home and 1 more"
    )
    assert _snapshot(tmp_path) == before


@pytest.mark.hostile
def test_a_link_to_a_users_folder_is_refused(tmp_path, registry):
    work = _user_folder(tmp_path / "work")
    link = tmp_path / "public"
    link.symlink_to(work, target_is_directory=True)
    before = _snapshot(tmp_path)
    assert _refused(link, registry) == NOT_A_SITE.format(out=f"{link} (a link to {work})")
    assert _snapshot(tmp_path) == before and link.is_symlink()


@pytest.mark.hostile
def test_a_link_loop_is_refused(tmp_path, registry):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    before = _snapshot(tmp_path)
    assert _refused(tmp_path / "a", registry) == (
        f"--out {tmp_path / 'a'}: a symbolic link that never reaches a folder (a loop); give a folder for the site"
    )
    assert _snapshot(tmp_path) == before


@pytest.mark.hostile
def test_the_home_folder_is_refused(tmp_path, registry, monkeypatch):
    home = tmp_path / "home" / "alice"
    (home / "Documents").mkdir(parents=True)
    (home / ".bashrc").write_text("export EDITOR=vi\n", encoding="utf-8")
    (home / "index.html").write_text("<p>hi</p>\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    before = _snapshot(tmp_path)
    for out in (home, home.parent):  # the home folder, or a folder holding it
        assert _refused(out, registry) == (
            f"--out {out}: would replace {home}, which is not a built site; give a separate folder such as ./site"
        )
    assert _snapshot(tmp_path) == before


@pytest.mark.hostile
def test_an_empty_home_folder_is_refused_too(tmp_path, registry, monkeypatch):
    """Empty is fine for an ordinary folder, but the home folder is never a site's place."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert _refused(home, registry) == (
        f"--out {home}: would replace {home}, which is not a built site; give a separate folder such as ./site"
    )
    assert list(tmp_path.iterdir()) == [home] and not any(home.iterdir())


@pytest.mark.hostile
def test_out_inside_the_registry_is_refused(tmp_path):
    zoo = _one_entry_registry(tmp_path / "zoo")
    before = _snapshot(tmp_path)
    for out in (zoo / "site", zoo / "bert" / "public"):
        assert _refused(out, zoo) == (
            f"--out {out}: is inside the registry folder {zoo}, where the site would mix with the registry's "
            "entries; give a folder outside it such as ./site"
        )
    assert _snapshot(tmp_path) == before


@pytest.mark.hostile
def test_the_registry_itself_is_refused(tmp_path):
    zoo = _one_entry_registry(tmp_path / "zoo")
    before = _snapshot(tmp_path)
    assert _refused(zoo, zoo) == (
        f"--out {zoo}: would replace {zoo}, which is not a built site; give a separate folder such as ./site"
    )
    assert _snapshot(tmp_path) == before


@pytest.mark.hostile
def test_out_inside_the_documentation_folder_is_refused(registry):
    out = REPO / "docs" / "site"
    assert _refused(out, registry) == (
        f"--out {out}: is inside the documentation folder {REPO / 'docs'}, which MkDocs would publish as pages "
        "of the next build; give a folder outside it such as ./site"
    )
    assert not out.exists() and not _staging_folders(REPO / "docs")


@pytest.mark.hostile
def test_the_working_folder_is_refused(tmp_path, registry, monkeypatch):
    (tmp_path / "notes.txt").write_text("important\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    assert _refused(Path("."), registry) == (
        f"--out {tmp_path}: would replace {tmp_path}, which is not a built site; give a separate folder such as ./site"
    )
    assert _snapshot(tmp_path) == before


@pytest.mark.hostile
def test_a_file_is_refused(tmp_path, registry):
    target = tmp_path / "site"
    target.write_text("not a folder\n", encoding="utf-8")
    assert _refused(target, registry) == f"--out {target}: is a file; give a folder for the site"
    assert target.read_text(encoding="utf-8") == "not a folder\n" and list(tmp_path.iterdir()) == [target]


# ---- what may be replaced ---------------------------------------------------------------------------


@pytest.mark.hostile
def test_rebuilding_replaces_a_previous_site(tmp_path, registry):
    """A site archzoo built is replaced whole, even with some of its files since deleted."""
    out = tmp_path / "site"
    build_site(out, registry=[registry])
    assert (out / "models" / "bert-base-uncased" / "index.html").is_file()
    (out / "404.html").unlink()  # a file the marker lists but that is gone: nothing of the user's to lose
    shutil.rmtree(out / "search")
    other = tmp_path / "other"
    other.mkdir()
    (other / "gpt2-small-test.yaml").write_text(GPT2_YAML, encoding="utf-8")
    temp_before = tempfile.tempdir
    build_site(out, registry=[other])
    assert tempfile.tempdir == temp_before  # the build's private temp folder is not left in effect
    assert (out / "models" / "gpt2-small-test" / "index.html").is_file()
    assert not (out / "models" / "bert-base-uncased").exists()  # replaced, not merged
    assert (out / "404.html").is_file() and (out / "search").is_dir()
    marker = (out / ".archzoo-site").read_text(encoding="utf-8").split("\n")
    assert marker[0] == "archzoo-site 1" and marker[2] == "built-by: archzoo 0.1.0"
    assert not any(other.as_posix() in line for line in marker)  # no path of the build machine
    listed = set(marker[marker.index(next(m for m in marker if m.startswith("files: "))) + 1 : -1])
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {".archzoo-site"}
    assert listed == on_disk
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "site"]  # no staging folder left


@pytest.mark.hostile
def test_an_empty_folder_is_fine(tmp_path, registry):
    out = tmp_path / "public"
    out.mkdir()
    build_site(out, registry=[registry])
    assert (out / "index.html").is_file() and (out / ".archzoo-site").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["public"]


# ---- killed and concurrent builds ------------------------------------------------------------------

#: Runs `archzoo build` (the CLI's main) in a child process that stops at one point and waits for a
#: file to appear: "render" before MkDocs renders the first page (the staging folder and the
#: build's temporary folder exist), "swap" right after the old site was moved out of --out. A one-entry
#: build takes under a second; stopping there makes killing it at that moment certain.
LAUNCHER = r"""
import os, sys, tempfile, time
mode, go, out = sys.argv[1], sys.argv[2], os.path.realpath(sys.argv[3])
tempfile.gettempdir()  # as in a process that used tempfile before the build: TMPDIR is read and cached now

def pause():
    sys.stderr.write("launcher: paused\n")
    sys.stderr.flush()
    while not os.path.exists(go):
        time.sleep(0.05)

if mode == "render":
    import mkdocs.commands.build as mkdocs_build
    render = mkdocs_build._build_page
    rendered = []
    def paused_render(*args, **kwargs):
        if not rendered:
            pause()
        rendered.append(1)
        return render(*args, **kwargs)
    mkdocs_build._build_page = paused_render
elif mode == "swap":
    rename = os.replace
    def paused_rename(src, dst, *args, **kwargs):
        rename(src, dst, *args, **kwargs)
        if os.fspath(src) == out:
            pause()
    os.replace = paused_rename

from archzoo.cli import main
sys.exit(main(["build", "--out", out, *sys.argv[4:]]))
"""


class Paused:
    """A build in a child process, stopped at one point until `resume` or `kill`."""

    def __init__(self, mode: str, out: Path, registry: Path, temp: Path, go: Path):
        self.go = go
        env = {**os.environ, "TMPDIR": str(temp)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, mode, str(go), str(out), "--registry", str(registry)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        watchdog = threading.Timer(60, self.process.kill)  # never hang the test run
        watchdog.start()
        self.lines: list[str] = []
        try:
            for line in self.process.stderr:
                self.lines.append(line)
                if line == "launcher: paused\n":
                    break
        finally:
            watchdog.cancel()
        assert self.lines[-1:] == ["launcher: paused\n"], "".join(self.lines)[-3000:]

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.communicate(timeout=30)

    def resume(self) -> tuple[int, str]:
        self.go.touch()
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, out + err


def _cli_build(out: Path, registry: Path, temp: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "archzoo.cli", "build", "--registry", str(registry), "--out", str(out)],
        env={**os.environ, "TMPDIR": str(temp)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.hostile
def test_a_killed_build_leaves_debris_that_the_next_build_removes(tmp_path, registry):
    temp = tmp_path / "temp"
    temp.mkdir()
    out = tmp_path / "site"
    build_site(out, registry=[registry])
    before = _snapshot(out)
    killed = Paused("render", out, registry, temp, tmp_path / "go")
    killed.kill()
    # the debris: the staging folder, with the build's temporary folder inside it; nothing in TMPDIR
    [staging] = _staging_folders(tmp_path)
    assert staging.name.startswith(".site.building-") and (staging / "tmp").is_dir()
    assert not any(temp.iterdir())
    assert _snapshot(out) == before  # the killed build never touched the site

    result = _cli_build(out, registry, temp)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not _staging_folders(tmp_path) and not any(temp.iterdir())
    assert (out / "models" / "bert-base-uncased" / "index.html").is_file()


@pytest.mark.hostile
def test_a_running_builds_staging_folder_is_left_alone(tmp_path, registry):
    temp = tmp_path / "temp"
    temp.mkdir()
    running = Paused("render", tmp_path / "a", registry, temp, tmp_path / "go")
    try:
        [staging] = _staging_folders(tmp_path)
        during = _snapshot(staging)
        build_site(tmp_path / "b", registry=[registry])  # beside it, while it runs
        assert _staging_folders(tmp_path) == [staging] and _snapshot(staging) == during
    finally:
        code, output = running.resume()
    assert code == 0, output[-3000:]
    assert (tmp_path / "a" / ".archzoo-site").is_file() and (tmp_path / "b" / ".archzoo-site").is_file()
    assert not _staging_folders(tmp_path) and not any(temp.iterdir())


@pytest.mark.hostile
def test_a_build_killed_mid_swap_gets_the_old_site_back(tmp_path, registry):
    """Killed between moving the old site out and the new one in: the next build puts the old one back,
    so a failing next build still leaves the previous site in place."""
    temp = tmp_path / "temp"
    temp.mkdir()
    out = tmp_path / "site"
    build_site(out, registry=[registry])
    before = _snapshot(out)
    Paused("swap", out, registry, temp, tmp_path / "go").kill()
    assert not out.exists() and len(_staging_folders(tmp_path)) == 1
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "x.yaml").write_text("architecture: nosuch\ntitle: X\nsummary: X\nyear: 2020\n", encoding="utf-8")
    with pytest.raises(ArchzooError, match=r"(?s)^site build failed: .*: unknown architecture 'nosuch'") as info:
        build_site(out, registry=[broken])
    assert str(info.value).endswith(f"; the previous site in {out} is untouched")
    assert _snapshot(out) == before
    assert not _staging_folders(tmp_path)


@pytest.mark.hostile
def test_a_folder_named_like_a_staging_folder_is_not_archzoos_to_remove(tmp_path, registry):
    """Only a folder whose owner file archzoo wrote, and whose lock is free, is taken for a dead build."""
    lookalike = tmp_path / ".site.building-abcd1234"
    lookalike.mkdir()
    (lookalike / "owner").write_text("the owner of these notes is me\n", encoding="utf-8")
    (lookalike / "notes.txt").write_text("keep\n", encoding="utf-8")
    no_owner = tmp_path / ".site.building-wxyz5678"
    no_owner.mkdir()
    (no_owner / "draft.txt").write_text("keep too\n", encoding="utf-8")
    old = 1_000_000_000  # 2001: far older than any grace period
    for path in (lookalike / "owner", lookalike, no_owner):
        os.utime(path, (old, old))
    before = _snapshot(tmp_path)
    build_site(tmp_path / "site", registry=[registry])
    assert {k: v for k, v in _snapshot(tmp_path).items() if not k.startswith("site")} == before
