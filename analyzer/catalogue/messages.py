"""The fixed phrases of what a user reads (analyzer/catalogue/messages.yaml), by language.

>>> message("verdict-expected", "zh", title="x")
'Issue 中描述的是预期行为：x'
>>> message("level-high", "fr")  # an unknown language falls back to English
'high'
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from analyzer.cache import cache_dir, kept
from analyzer.structured import load_yaml

MESSAGES_PATH = Path(__file__).resolve().parent / "messages.yaml"


@functools.cache
def _messages() -> dict[str, dict[str, str]]:
    """The phrases, parsed once per text of the file: the parsed mapping is kept in the cache
    folder as JSON, named by the text's digest (parsing the YAML costs a run ~2.5 ms, reading
    the JSON back ~0.1 ms)."""
    text = MESSAGES_PATH.read_text(encoding="utf-8")
    digest = hashlib.sha256(text.encode()).hexdigest()[:24]
    return kept(
        cache_dir(),
        f"messages-{digest}.json",
        ("messages-*.json", 4),
        read=lambda data: parsed if isinstance(parsed := json.loads(data), dict) else None,
        make=lambda: load_yaml(text)["messages"],
        write=lambda parsed: json.dumps(parsed, ensure_ascii=False).encode(),
    )


def message(key: str, lang: str = "en", **values: object) -> str:
    texts = _messages()[key]
    return str(texts.get(lang) or texts["en"]).format(**values)
