"""A test's archzoo with only some plugins: ARCHZOO_PLUGINS set and the process-wide host loaded with them alone."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from archzoo.host import PluginHost, get_host, reset_host


@contextlib.contextmanager
def only_plugins(*names: str) -> Iterator[PluginHost]:
    """Within the block archzoo loads the plugins ``names`` alone: the process-wide host (`get_host`, which the
    site build and the page cache read) and every archzoo process started in it (through ARCHZOO_PLUGINS).

    Why: a site is built with a page and a what-if export for every architecture installed (some forty, most
    of a small zoo's build time); a test of where a build writes or what its cache keeps needs two."""
    previous = get_host()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARCHZOO_PLUGINS", ",".join(names))
        host = PluginHost().load()
        assert set(host.plugin_infos) == set(names), "a plugin named here is not installed"
        reset_host(host)
        try:
            yield host
        finally:
            reset_host(previous)
