"""Shared fixtures, and the rule that CI never silently skips a reference or browser check."""

from __future__ import annotations

import os
import resource
import tempfile
import time
from collections.abc import Generator

import pytest

import fast_subset
from archzoo.host import PluginHost, reset_host

#: The registry index cache of every test (and every archzoo process a test starts) goes to a fresh folder,
#: never to the user's ~/.cache.
os.environ["ARCHZOO_CACHE_DIR"] = tempfile.mkdtemp(prefix="archzoo-test-cache-")

# Property tests explore new examples on a developer's machine; on CI they replay the same ones every run, so
# a red CI always means a change broke something, never that the search got lucky.
try:
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
    if os.environ.get("CI", "").lower() == "true":
        _hypothesis_settings.load_profile("ci")
except ImportError:  # hypothesis comes with the dev extra
    pass


def pytest_configure(config: pytest.Config) -> None:
    # the fast subset's property tests draw a tenth of their examples (`settings(max_examples=examples(N))`, from
    # tests/fast_subset.py), `make test` all N: known here, before any test module (and its settings) is imported
    fast_subset.in_fast_subset = fast_subset.leaves_out_slow(config.getoption("markexpr", "") or "")
    # registered here rather than in pyproject.toml, beside the rule that applies them
    config.addinivalue_line(
        "markers",
        "slow: left out of the fast subset, `make test-fast` (pytest -m 'not slow and not browser and not wheel'); "
        "`make test` runs it",
    )
    config.addinivalue_line(
        "markers",
        "sweep: a module that repeats its checks over many cases: in the fast subset each test function runs its "
        "first case only (the rest are marked slow)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a module marked ``sweep``, every case of a test function but its first is ``slow``: the fast subset
    still runs each function's logic once, `make test` runs the whole sweep."""
    seen: set[tuple[str, str]] = set()
    for item in items:
        if item.get_closest_marker("sweep") is None:
            continue
        function = (item.nodeid.partition("::")[0], getattr(item, "originalname", item.name))
        if function in seen:
            item.add_marker(pytest.mark.slow)
        seen.add(function)


_REQUIRED_MARKERS = ("reference", "browser")
_skipped_required: list[str] = []


#: each test module's time: the seconds its tests' setup, call and teardown took, summed over the workers
_module_seconds: dict[str, float] = {}
#: each test module's processor seconds (this process and the processes it waited for): on a machine shared with
#: other work the wall seconds grow with the load, these much less, so two runs compare like with like
_module_cpu: dict[str, float] = {}


def _cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    """Each phase's report carries the processor seconds the phase took (a user property, so that
    pytest-xdist's workers send it to the controller with the report)."""
    outcome = yield
    started = getattr(item, "_archzoo_cpu_started", None)
    if started is not None:
        outcome.get_result().user_properties.append(("cpu_seconds", _cpu_seconds() - started))
    item._archzoo_cpu_started = _cpu_seconds()  # type: ignore[attr-defined]  # the next phase starts here


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    item._archzoo_cpu_started = _cpu_seconds()  # type: ignore[attr-defined]
    yield


#: how many modules the end-of-run table of the slowest lists
SLOWEST_MODULES = 20


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    module = report.nodeid.split("::", 1)[0]
    _module_seconds[module] = _module_seconds.get(module, 0.0) + report.duration
    cpu = sum(value for key, value in report.user_properties if key == "cpu_seconds")
    _module_cpu[module] = _module_cpu.get(module, 0.0) + cpu
    # an expected failure is reported as skipped too, but it ran: only a test that did not run is missing
    if report.skipped and not hasattr(report, "wasxfail") and any(m in report.keywords for m in _REQUIRED_MARKERS):
        _skipped_required.append(
            f"{report.nodeid}: {report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr}"
        )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Where the suite's time goes, by area: the slowest test modules, each with its tests' summed seconds (over
    all workers, so their sum is the suite's busy time, not its wall time) and its processor seconds (which the
    load of other work on the machine changes much less)."""
    if not _module_seconds:
        return
    total = sum(_module_seconds.values())
    cpu = sum(_module_cpu.values())
    terminalreporter.section(f"time by test module ({total:,.0f} s of test time, {cpu:,.0f} s of processor time)")
    terminalreporter.write_line("    wall    share      cpu  module")
    for module, seconds in sorted(_module_seconds.items(), key=lambda item: -item[1])[:SLOWEST_MODULES]:
        terminalreporter.write_line(
            f"{seconds:8.1f} s {100 * seconds / total:5.1f}% {_module_cpu.get(module, 0.0):7.1f} s  {module}"
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """On CI (CI=true) a skipped reference or browser test fails the run: those checks must run there."""
    if os.environ.get("CI", "").lower() == "true" and _skipped_required:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"CI=true but {len(_skipped_required)} required test(s) were skipped:", red=True)
            for line in _skipped_required[:20]:
                reporter.write_line(f"  {line}", red=True)
        session.exitstatus = 1


@pytest.fixture
def fresh_host():
    """A host loaded from the installed entry points, made the process-wide one for the test."""
    host = PluginHost(strict=False).load()
    reset_host(host)
    yield host
    reset_host(None)


@pytest.fixture
def host(archzoo_host: PluginHost) -> PluginHost:
    """archzoo's plugin host for one test: the kit's ``archzoo_host`` (`archzoo.testing`), freshly loaded from the
    installed entry points and made the process-wide host, as a third-party plugin's tests get it."""
    return archzoo_host


@pytest.fixture(scope="session")
def T():
    """The transformers module, for the reference checks (skipped, and failed under CI, without it)."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()  # special token ids beyond a tiny vocabulary only warn
    return transformers
