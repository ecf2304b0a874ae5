"""Not scikit-learn: a stand-in that `make gpu-check` puts on the path only where scikit-learn is missing.

fairseq imports ``sklearn.metrics`` at module level in two modules the harness never uses (an audio
task and the sentence-prediction criterion); without it ``import fairseq`` fails. Every function here
raises, so nothing can compute with it by mistake; a machine that needs scikit-learn installs it.
"""
