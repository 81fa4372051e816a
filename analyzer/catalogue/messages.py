"""The fixed phrases of what a user reads (analyzer/catalogue/messages.yaml), by language.

>>> message("verdict-expected", "zh", title="x")
'Issue 中描述的是预期行为：x'
>>> message("level-high", "fr")  # an unknown language falls back to English
'high'
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from pathlib import Path

from analyzer.atomic import atomic_path
from analyzer.cache import cache_dir, prune
from analyzer.structured import load_yaml

MESSAGES_PATH = Path(__file__).resolve().parent / "messages.yaml"


@functools.cache
def _messages() -> dict[str, dict[str, str]]:
    """The phrases, parsed once per text of the file: the parsed mapping is kept in the cache
    folder as JSON, named by the text's digest (parsing the YAML costs a run ~2.5 ms, reading
    the JSON back ~0.1 ms)."""
    text = MESSAGES_PATH.read_text(encoding="utf-8")
    folder = cache_dir()
    digest = hashlib.sha256(text.encode()).hexdigest()[:24]
    kept = folder / f"messages-{digest}.json" if folder is not None else None
    if kept is not None:
        with contextlib.suppress(OSError, ValueError):
            parsed = json.loads(kept.read_text(encoding="utf-8"))
            if isinstance(parsed, dict):
                return parsed
    parsed = load_yaml(text)["messages"]
    if kept is not None:
        with contextlib.suppress(OSError), atomic_path(kept) as tmp:
            tmp.write_text(json.dumps(parsed, ensure_ascii=False), encoding="utf-8")
        prune(kept.parent, "messages-*.json", 4)
    return parsed


def message(key: str, lang: str = "en", **values: object) -> str:
    texts = _messages()[key]
    return str(texts.get(lang) or texts["en"]).format(**values)
