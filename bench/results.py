"""The notebook entry point before the layering change: ``bench.results.load("results")``, kept as an alias of
:mod:`bench.report.frame` so that notebooks written against it keep working (``bench.load_results()`` is the
documented way now).

    import bench.results
    df = bench.results.load("results")
"""

from bench.report.frame import filtered, load, wide

__all__ = ["filtered", "load", "wide"]
