"""The mkdocs-gen-files script (named in mkdocs.yml): writes the zoo's pages at build time."""

from archzoo.site.generate import generate_pages

if __name__ == "<run_path>":  # run by the gen-files plugin, never on import
    generate_pages()
