"""Hostile plugin: raises a BaseException subclass (not an Exception) from register_architectures."""

from archzoo import hookimpl


class Bail(BaseException):
    pass


@hookimpl
def register_architectures(register):
    raise Bail("stop everything")
