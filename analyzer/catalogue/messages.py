"""The fixed phrases of what a user reads (analyzer/catalogue/messages.yaml), by language.

>>> message("verdict-expected", "zh", title="x")
'Issue 中描述的是预期行为：x'
>>> message("level-high", "fr")  # an unknown language falls back to English
'high'
"""

from __future__ import annotations

import functools
from pathlib import Path

from analyzer.structured import load_yaml

MESSAGES_PATH = Path(__file__).resolve().parent / "messages.yaml"


@functools.cache
def _messages() -> dict[str, dict[str, str]]:
    return load_yaml(MESSAGES_PATH.read_text(encoding="utf-8"))["messages"]


def message(key: str, lang: str = "en", **values: object) -> str:
    texts = _messages()[key]
    return str(texts.get(lang) or texts["en"]).format(**values)
