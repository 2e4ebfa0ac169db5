"""Hostile plugin: prints to stdout while it is imported."""

print("print_at_import: loaded")
