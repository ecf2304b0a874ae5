"""fairseq baselines (AR Transformer, NAT, iNAT, CMLM, LevT, InsT) behind the System contract.

fairseq is the optional extra ``[fairseq]`` (``fairseq-fixed==0.12.3.1``) and is imported lazily;
the flag mapping (:mod:`systems.fairseq_nat.flags`) and presets work without it.
Registry entries: ``systems.fairseq_nat.system:<name>`` for the six names in
:data:`systems.fairseq_nat.presets.VARIANTS`.
"""
