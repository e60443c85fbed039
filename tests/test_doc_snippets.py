"""Every Python block of README.md and docs/ runs as written, and prints what the text shows.

The collector and its conventions (``# ->`` expected output, ``<!-- snippet: skip REASON -->``,
``<!-- snippet: slow -->``) are in ``tests/_doc_snippets.py``.
"""

from __future__ import annotations

import pytest

from _doc_snippets import Snippet, collect, matches, run

SNIPPETS = collect()


def _param(s: Snippet):
    marks = []
    if s.mode == "skip":
        marks.append(pytest.mark.skip(reason=f"{s.id}: {s.reason}"))
    elif s.mode == "slow":
        marks.append(pytest.mark.slow)
    return pytest.param(s, id=s.id, marks=marks)


@pytest.mark.parametrize("snippet", [_param(s) for s in SNIPPETS])
def test_doc_snippet_runs_and_prints_what_the_text_shows(snippet: Snippet, tmp_path):
    prints = run(snippet, tmp_path)
    printed: dict[int, list[str]] = {}
    for line, text in prints:
        printed.setdefault(line, []).append(text.rstrip("\n"))
    for line, expected in snippet.expectations().items():
        assert line in printed, f"{snippet.path.name}:{line} printed nothing"
        actual = printed[line][-1]
        assert matches(expected, actual), (
            f"{snippet.path.name}:{line} printed {actual!r}; the text shows {expected!r}")


def test_there_are_snippets_and_each_skip_has_a_reason():
    assert len(SNIPPETS) >= 8
    assert all(s.reason for s in SNIPPETS if s.mode == "skip")


@pytest.mark.parametrize(("expected", "actual", "ok"), [
    ("SOLVED [1. 0.] 0.0", "SOLVED [1. 0.] 0.0", True),
    ("[2.5 0. ]", "[2.5 0. ]", True),
    ("OK [0.2 0 0] [0 6.67 0]", "OK [ 0.2003 -0.0011  0.0002] [-0.004  6.6712  0.01 ]", True),
    ("OK [0.2 0 0] [0 6.67 0]", "OK [0.2003 0.0 0.0] [0.0 6.6612 0.0]", False),   # digit shown
    ("14 4 12", "14 4 13", False),
    ("SOLVED 1.0", "INACCURATE 1.0", False),
    ("1 2", "1 2 3", False),
])
def test_numbers_match_to_the_digits_shown_and_words_exactly(expected, actual, ok):
    assert matches(expected, actual) is ok
