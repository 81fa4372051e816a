"""Strings kubectl folds over lines, read as one line (analyzer/parse/unfold.py): in objects, and
in parts of them pasted as text."""

from __future__ import annotations

import pytest

from analyzer.parse.unfold import FOLDED_MAX, unfold

STATUS = (
    "status:\n"
    "  conditions:\n"
    '  - message: \'pods "gpu-agent-7f9c-" is forbidden: unable to validate against any\n'
    "      security context constraint: [provider restricted-v2: .spec.hostPID: Invalid\n"
    "      value: true]'\n"
    "    reason: FailedCreate\n"
)


def test_a_folded_quoted_message_is_one_line_and_every_line_keeps_its_number():
    lines = unfold(STATUS).split("\n")
    assert lines[2] == (
        '  - message: \'pods "gpu-agent-7f9c-" is forbidden: unable to validate against any '
        "security context constraint: [provider restricted-v2: .spec.hostPID: Invalid value: true]'"
    )
    assert lines[3:5] == ["", ""] and lines[5] == "    reason: FailedCreate"
    assert len(lines) == len(STATUS.split("\n"))


@pytest.mark.parametrize("cut", ["[... ...]", "...", None])
def test_a_message_the_paste_cuts_is_joined_up_to_the_cut(cut):
    head = STATUS.split("\n")[:4]  # the message's first two lines, its close left out
    text = "\n".join(head + ([cut] if cut else []))
    lines = unfold(text).split("\n")
    assert lines[2].endswith("restricted-v2: .spec.hostPID: Invalid")
    assert lines[3] == "" and (cut is None or lines[4] == cut)


@pytest.mark.parametrize(
    "text",
    [
        # a Markdown list whose first item opens a quote it never closes
        "- Error: 'Failed to initialize NVML: Unknown Error on every GPU pod we start here\n"
        "  - seen after 10 s\n- next",
        # a key whose quote is open, followed by its sibling keys
        "  message: 'pods are forbidden by the admission plugin that enforces the policy\n"
        "  reason: FailedCreate",
        # closed on its own line
        "  message: 'a message long enough to have been folded, but closed right here'\n    x",
    ],
)
def test_what_is_no_folded_string_stays_as_it_is(text):
    assert unfold(text) == text


def test_a_quote_open_for_more_lines_than_any_message_is_left_as_it_is():
    text = (
        "  m: 'a value long enough to be folded by kubectl at eighty columns or so\n"
        + "\n".join(["    more words"] * (FOLDED_MAX + 5))
    )
    assert unfold(text) == text
