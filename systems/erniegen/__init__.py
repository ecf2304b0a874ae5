"""ERNIE-GEN fine-tuning (Xiao et al., IJCAI-20) on the shared backbone: docs/systems.md §3.

Two-stream infilling training (context stream over source + noised target, query stream of
``[ATTN]`` symbols with the same weights), noise-aware generation, infilling decoding with a
K/V cache and GNMT-length-penalised beam search. Importing this package stays light; torch loads
in the submodules that need it (``model``, ``decode``, ``data``, ``paddle``).
"""
