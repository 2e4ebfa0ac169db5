"""Hostile plugin: declares the entry point 'bert', the name of a built-in plugin; must never be imported."""

raise SystemExit(99)
