"""Every fix_tokenization rule and quirk, remove_repeat, WordPiece merge, Python-2 text semantics."""

import pytest

from bench.scoring.text import (
    bert_basic_tokenize,
    fix_tokenization,
    lower,
    merge_wordpieces,
    mist_clean,
    remove_repeat,
    split_ws,
    strip_ws,
)


@pytest.mark.parametrize("src, out", [
    ("( a ) [ b ] { c }", "-lrb- a -rrb- -lsb- b -rsb- -lcb- c -rcb-"),
    ("[UNK] & < >", "UNK &amp; &lt; &gt;"),
    ('he said " hi " and " bye "', "he said `` hi '' and `` bye ''"),
    ("' a ' b '", "` a ' b `"),
    ("he doesn ' t know", "he does n't know"),
    ("john ' s , i ' d , we ' ll", "john 's , i 'd , we 'll"),
    ("wait . . . no", "wait ... no"),
    (". .", ". ."),
    ("$ 3 , 000", "$ 3,000"),
    ("1 , 000 , 000 people", "1,000,000 people"),
    ("3 . 03 %", "3.03 %"),
    ("a - b", "a-b"),
    ("a - b c", "a-b c"),
    ("a - - b", "a -- b"),
    ("- a", "- a"),
    ("a -", "a -"),
    (", - b", ", - b"),
    ("a - ,", "a - ,"),
])
def test_fix_tokenization_rules(src, out):
    assert fix_tokenization(src) == out


def test_single_quote_state_is_separate_from_double_quote_state():
    assert fix_tokenization("\" ' x ' \"") == "`` ` x ' ''"


def test_nt_rule_takes_priority_and_can_leave_an_empty_token():
    # quirk: the 'n' is cut from the previous token even when that token is just "n"
    assert fix_tokenization("n ' t") == " n't"
    assert fix_tokenization("x n ' t") == "x  n't"


def test_us_abbreviation_quirk_reemits_the_final_dot():
    # the loop advances two tokens, not to the end of the abbreviation
    assert fix_tokenization("U . S . army") == "U.S. . army"
    assert fix_tokenization("the U . N .") == "the U.N. ."
    assert fix_tokenization("u . s . army") == "u . s . army"  # lower case never merges


def test_dash_punctuation_test_is_a_substring_test():
    # '()' is a substring of string.punctuation, so it counts as punctuation; 'ab' does not
    assert fix_tokenization("() - b") == "() - b"
    assert fix_tokenization("ab - b") == "ab-b"


def test_digit_comma_rule_accepts_comma_only_tokens():
    # _is_digit(',') is true (every char is a digit or ','), so ', , 5' glues
    assert fix_tokenization(", , 5") == ",,5"


def test_python2_semantics_are_ascii_only():
    assert fix_tokenization("3 , ²") == "3 , ²"
    assert fix_tokenization("3 , ²", ascii_only=False) == "3,²"
    assert fix_tokenization("É . S . x") == "É . S . x"
    assert fix_tokenization("É . S . x", ascii_only=False) == "É.S. . x"
    assert fix_tokenization("a\xa0b") == "a\xa0b"
    assert fix_tokenization("a\xa0b", ascii_only=False) == "a b"
    assert split_ws("a\u2003b c", True) == ["a\u2003b", "c"]
    assert strip_ws("\xa0a ", True) == "\xa0a"
    assert lower("ÀB", True) == "Àb"
    assert lower("ÀB", False) == "àb"


def test_remove_repeat_quirk():
    assert remove_repeat("a a b") == "a a b"
    assert remove_repeat("x a a") == "x a"
    assert remove_repeat("x a a a b b") == "x a b"
    assert remove_repeat("a a a") == "a a"
    assert remove_repeat("") == ""


def test_wordpiece_merge_and_mist_clean():
    assert merge_wordpieces("play ##ing foot ##ball") == "playing football"
    assert mist_clean("what is the play ##ing [SEP] [SEP]") == "what is the playing"
    # [SEP] is deleted wherever it occurs, never used as a cut point
    assert mist_clean("[SEP] a b [SEP] c") == "a b c"
    assert mist_clean("x a [SEP] a") == "x a"


def test_bert_basic_tokenize():
    assert bert_basic_tokenize("Héllo, World's \"best\"?") == "hello , world ' s \" best \" ?"
