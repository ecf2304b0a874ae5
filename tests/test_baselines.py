from bench.api.types import Example
from systems.baselines import CopySource, Lead1, first_sentence


def test_first_sentence_cuts_at_first_sentence_end():
    assert first_sentence("The cat sat. The dog ran.") == "The cat sat."
    assert first_sentence("\n\n  Rain fell in Wales!  Then it stopped.") == "Rain fell in Wales!"
    assert first_sentence('Officials in the U.S. said "no". More.') == 'Officials in the U.S. said "no".'
    assert first_sentence("one line only") == "one line only"


def test_copy_source_prefers_answer_sentence():
    ex = Example("1", "answer [SEP] para", "q?", {"sentence": "The  answer\nsentence."})
    assert CopySource("smoke").decode_one(ex) == "The answer sentence."
    assert CopySource("smoke").decode([Example("2", "how do i learn ?", "x")]) == ["how do i learn ?"]


def test_lead1_refuses_empty_document():
    import pytest

    with pytest.raises(ValueError, match="no document text"):
        Lead1("smoke").decode_one(Example("3", "", "ref"))
