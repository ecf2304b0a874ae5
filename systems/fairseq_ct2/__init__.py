"""The fairseq Transformer decoded through CTranslate2 (#50): the AR baseline a practitioner would deploy.

It trains nothing of its own: it converts the checkpoint of ``fairseq_transformer`` (same budget, settings
and seed) and decodes it with CTranslate2's int8/float16/float32 kernels.
"""
