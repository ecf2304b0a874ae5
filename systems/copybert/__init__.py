"""CopyBERT (Varanasi et al., 2020): BERT question generation with a copy mechanism over attention maps.

One class (:class:`systems.copybert.system.CopyBERTSystem`) with the five paper variants as presets
(:mod:`systems.copybert.presets`). Importing this package stays light: torch loads inside the
modules that need it (``layout``, ``model``, ``data``), never here. Decoding is the shared search
(:mod:`systems.decoding`, its ``opennmt`` rule: the reference's beam) over this family's step scorers.
"""
