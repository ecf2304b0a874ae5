"""Length-forced decoding for the fairseq baselines: every system emits exactly the asked length.

Why: untrained (``weights=random``) models predict arbitrary lengths, and decode time grows with
length, so a speed column from random weights is only meaningful when every system produces the
reference's length. ``forced_length`` L counts target positions *including the end marker*
(``</s>`` here, ``[SEP]`` for the encoder NAR systems), so each system emits C = L - 1 content
tokens (at least 1). The model still computes everything it would compute untouched (length head,
deletion and insertion heads): only the *decisions* taken from those scores are overridden, right
after the scores are produced, so the timed work is the real work.

Per family (batch of one; the meter times batch size 1):

- AR Transformer: beam search with ``min_len = max_len = C``: exactly C tokens, then ``</s>``. In a
  batch (the throughput sweep) each row has its own C: the log-probabilities of row r are masked as the
  generator masks them for one example (``</s>`` barred before step C_r, only ``</s>`` at step C_r), the
  rows' lengths following fairseq's row reorders (beam expansion, beam choice, finished sentences leaving
  the batch) through ``reorder_encoder_out``, so one generator call decodes the batch as fairseq batches.
- NAT, iNAT, CMLM: the predicted length is replaced by C + 2 (``<s>`` + C + ``</s>``, fairseq's
  convention); the refinement loop then runs its fixed number of passes. Each position's word is the
  model's best real token (never a special: an untrained model echoes its ``<unk>`` canvas, an output
  the detokenizer strips to nothing), so the output has C tokens as the other families' do.
- LevT: the first placeholder insertion opens C slots and word insertion fills them with real
  tokens (never ``<unk>``, the placeholder itself: an untrained model, whose tied embeddings echo
  its input, would otherwise leave placeholders open and re-run word insertion every pass);
  afterwards deletion keeps every token and placeholder insertion adds none, so the canvas stays
  at C while each pass still runs the deletion and insertion classifiers (what a converged LevT
  computes per pass).
- InsT: insertion is the only way to grow, one token per slot per pass (parallel, balanced-tree
  order), so the canvas grows 0 -> 1 -> 3 -> 7 ... up to C (evenly spread slots when fewer are
  needed) and the remaining passes insert nothing. This is the closest honest equivalent: the
  output length is C as for the others, and the number of passes is the preset's.

The refinement generator used here has adaptive early stopping off (``--iter-decode-force-max-iter``),
so every iterative system runs exactly its preset's passes (Table 1's "Iter" column).
"""

from __future__ import annotations

from typing import Any

_NEG = float("-inf")
#: the systems whose forced length can be set per row of one batch: the length head's one decision (NAT, iNAT,
#: CMLM) or the AR decoder's end-of-sentence choice at each step; the insertion families force one example at a time
PER_ROW = ("fairseq_nat", "fairseq_inat", "fairseq_cmlm", "fairseq_transformer")


def content_tokens(forced_length: int) -> int:
    """Content tokens for a forced length that counts the end marker (at least one)."""
    return max(int(forced_length) - 1, 1)


class LengthForcer:
    """Wraps the decision-producing heads of one fairseq model; inactive until :meth:`target` is set."""

    def __init__(self, system: str, model: Any, pad: int, specials: tuple[int, ...] = ()) -> None:
        self.system, self.model, self.pad = system, model, pad
        self.specials = list(specials)  # never inserted as words (<s> <pad> </s> <unk>)
        self.content: int | None = None
        self.rows: list[int] | None = None  # per-row contents of a forced batch (target_rows)
        self._row_content: Any = None  # AR: the rows' contents in the generator's current row order
        self._step = 0  # AR: the decoder step being scored (tokens fed so far - 1)
        dec = model.decoder
        if system in ("fairseq_nat", "fairseq_inat", "fairseq_cmlm"):
            dec.forward_length_prediction = self._length(dec.forward_length_prediction)
            dec.forward = self._nat_words(dec.forward)
        elif system == "fairseq_levt":
            dec.forward_mask_ins = self._mask_ins(dec.forward_mask_ins)
            dec.forward_word_del = self._word_del(dec.forward_word_del)
            dec.forward_word_ins = self._levt_word_ins(dec.forward_word_ins)
        elif system == "fairseq_inst":
            dec.forward_word_ins = self._word_ins(dec.forward_word_ins)
        elif system == "fairseq_transformer":
            dec.forward = self._ar_step(dec.forward)
            model.get_normalized_probs = self._ar_probs(model.get_normalized_probs)
            model.encoder.reorder_encoder_out = self._ar_reorder(model.encoder.reorder_encoder_out)
        else:
            raise ValueError(f"No length forcing defined for fairseq system '{system}'.")

    # ------------------------------------------------------------------ state
    def target(self, content: int | None) -> None:
        """Force ``content`` tokens in the next generate calls (None: decode untouched)."""
        self.content, self.rows, self._row_content = content, None, None

    def target_rows(self, contents: list[int]) -> None:
        """Force row i of the next batch to ``contents[i]`` tokens (length-head families only: NAT, iNAT,
        CMLM, whose one length decision is per row; the insertion families force one example at a time)."""
        if self.system not in PER_ROW:
            raise ValueError(f"{self.system} forces one example at a time; decode its batch item by item.")
        self.content, self.rows, self._row_content = max(contents), list(contents), None

    def _rows(self, tokens: Any) -> None:
        if tokens.size(0) != 1:
            raise RuntimeError("length-forced decoding takes one example at a time (batch size 1)")

    # ------------------------------------------------------------------ NAT / iNAT / CMLM
    def _length(self, fn: Any) -> Any:
        def forced(length_out: Any, encoder_out: Any, tgt_tokens: Any = None) -> Any:
            length_tgt = fn(length_out, encoder_out, tgt_tokens=tgt_tokens)
            if self.content is None or tgt_tokens is not None:
                return length_tgt
            if self.rows is not None:
                return length_tgt.new_tensor(self.rows).view(length_tgt.shape) + 2
            return length_tgt.new_full(length_tgt.shape, self.content + 2)  # <s> + C + </s>

        return forced

    def _nat_words(self, fn: Any) -> Any:
        """Bar the specials from each position's word choice, as LevT's word insertion: an untrained model's tied
        embeddings echo its ``<unk>`` canvas, so it would "emit" C tokens the output then strips to nothing (a
        tokens/s of 0 beside the same work)."""

        def forced(*args: Any, **kw: Any) -> Any:  # passed on as given: fairseq's ensemble wrapper reads them
            scores = fn(*args, **kw)
            if self.content is None or not self.specials:
                return scores
            canvas = kw["prev_output_tokens"] if "prev_output_tokens" in kw else args[2]
            d = self.model.decoder.dictionary
            # the content positions only: the frame's <s> and </s> stay the model's (NAT re-predicts them)
            content = canvas.ne(self.pad) & canvas.ne(d.bos()) & canvas.ne(d.eos())
            out = scores.clone()
            barred = out[..., self.specials]
            barred[content] = _NEG
            out[..., self.specials] = barred
            return out

        return forced

    # ------------------------------------------------------------------ AR Transformer (batched rows)
    def _ar_reorder(self, fn: Any) -> Any:
        def forced(encoder_out: Any, new_order: Any) -> Any:
            if self.rows is not None:
                if self._row_content is None:  # the first reorder expands sentences into beams
                    self._row_content = new_order.new_tensor(self.rows)
                self._row_content = self._row_content.index_select(0, new_order)
            return fn(encoder_out, new_order)

        return forced

    def _ar_step(self, fn: Any) -> Any:
        def forced(prev_output_tokens: Any, *args: Any, **kw: Any) -> Any:
            self._step = prev_output_tokens.size(1) - 1
            return fn(prev_output_tokens, *args, **kw)

        return forced

    def _ar_probs(self, fn: Any) -> Any:
        def forced(net_output: Any, log_probs: bool, sample: Any = None) -> Any:
            lprobs = fn(net_output, log_probs, sample)
            if self.rows is None or self._row_content is None:
                return lprobs
            eos = self.model.decoder.dictionary.eos()
            last = lprobs[:, -1, :]
            content = self._row_content
            last[content > self._step, eos] = _NEG  # not yet: </s> barred
            done = content <= self._step  # its C tokens are out: only </s>
            if bool(done.any()):
                keep = last[done, eos].clone()
                last[done] = _NEG
                last[done, eos] = keep
            return lprobs

        return forced

    # ------------------------------------------------------------------ LevT
    def _mask_ins(self, fn: Any) -> Any:
        def forced(normalize: bool, encoder_out: Any, prev_output_tokens: Any, **kw: Any) -> Any:
            scores, attn = fn(normalize=normalize, encoder_out=encoder_out, prev_output_tokens=prev_output_tokens, **kw)
            if self.content is None:
                return scores, attn
            self._rows(prev_output_tokens)
            slots = int(prev_output_tokens.ne(self.pad).sum()) - 1
            need = max(self.content - (slots - 1), 0)
            counts = [need // slots + (1 if i < need % slots else 0) for i in range(slots)]
            counts += [0] * (scores.size(1) - slots)
            if max(counts) >= scores.size(-1):
                raise ValueError(
                    f"forced length {self.content} needs {max(counts)} placeholders in one slot; LevT predicts "
                    f"at most {scores.size(-1) - 1}"
                )
            out = scores.new_full(scores.shape, _NEG)
            out[0, range(len(counts)), counts] = 0.0
            return out, attn

        return forced

    def _word_del(self, fn: Any) -> Any:
        def forced(normalize: bool, encoder_out: Any, prev_output_tokens: Any, **kw: Any) -> Any:
            scores, attn = fn(normalize=normalize, encoder_out=encoder_out, prev_output_tokens=prev_output_tokens, **kw)
            if self.content is None:
                return scores, attn
            out = scores.new_full(scores.shape, _NEG)
            out[..., 0] = 0.0  # class 0 = keep
            return out, attn

        return forced

    def _levt_word_ins(self, fn: Any) -> Any:
        def forced(normalize: bool, encoder_out: Any, prev_output_tokens: Any, **kw: Any) -> Any:
            scores, attn = fn(normalize=normalize, encoder_out=encoder_out, prev_output_tokens=prev_output_tokens, **kw)
            if self.content is None or not self.specials:
                return scores, attn
            out = scores.clone()
            out[..., self.specials] = _NEG
            return out, attn

        return forced

    # ------------------------------------------------------------------ InsT
    def _word_ins(self, fn: Any) -> Any:
        def forced(normalize: bool, encoder_out: Any, prev_output_tokens: Any) -> Any:
            scores = fn(normalize=normalize, encoder_out=encoder_out, prev_output_tokens=prev_output_tokens)
            if self.content is None:
                return scores
            import torch

            self._rows(prev_output_tokens)
            slots = int(prev_output_tokens.ne(self.pad).sum()) - 1
            k = min(max(self.content - (slots - 1), 0), slots)
            insert = torch.zeros(scores.size(1), dtype=torch.bool, device=scores.device)
            if k:
                insert[torch.arange(k, device=scores.device) * slots // k] = True
            out = scores.clone()
            out[0, insert, self.pad] = _NEG  # these slots insert the model's best real token
            out[0, ~insert] = _NEG
            out[0, ~insert, self.pad] = 0.0  # pad = "insert nothing here"
            return out

        return forced
