"""The `bench --include` route to the example plugin: register the same three entries by hand.

`bench --include examples/bench_example_plugin/bench_include.py ls systems` imports this file (its
folder goes on sys.path, so the package beside it imports). An installed copy of the plugin
registers the same references through its entry points; registering them again is a no-op.
"""

from bench.data import TASKS
from bench.scoring import RECIPES
from systems import SYSTEMS

SYSTEMS.register("lead_words", "bench_example_plugin.system:make", family="reference")
TASKS.register("toy_pairs", "bench_example_plugin.task:TASK")
RECIPES.register("exact_match", "bench_example_plugin.recipe:EXACT_MATCH")
