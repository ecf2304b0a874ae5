"""The harness version, in a module of its own so that the code that records it (run provenance, fetch
manifests) need not import the root package, whose lazy public API (bench.public) imports them."""

__version__ = "0.1.0"
