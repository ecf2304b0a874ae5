"""An example bench plugin (README "Add your own system"): nothing here registers itself; the
entry points in pyproject.toml or ``bench_include.py`` beside this package do."""
