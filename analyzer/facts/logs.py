"""Log statistics as facts (lines, errors, cut-off last line) and which hami-scheduler pod a
scheduler log came from (`kubectl logs --prefix` or the pasted command)."""

from __future__ import annotations

from analyzer.facts.model import FactSet, Where
from analyzer.parse.logs import ParsedLog

KEYS = {"device-plugin-log": "device_plugin", "scheduler-log": "scheduler"}


def produce(logs: list[ParsedLog], facts: FactSet) -> None:
    """
    >>> fs = FactSet(); produce([], fs); fs.lookup("logs.device_plugin.lines")
    UNKNOWN
    """
    for log in logs:
        key = KEYS.get(log.artefact.kind)
        if key is None:
            continue
        facts.mark_known(f"logs.{key}.")
        st = log.stats
        at = Where(log.artefact.file.name, log.artefact.first_line)
        facts.put(f"logs.{key}.lines", facts.value(f"logs.{key}.lines", 0) + st.lines, at)
        if key == "device_plugin":
            errs = st.severities.get("E", 0) + st.severities.get("F", 0)
            facts.put(
                "logs.device_plugin.errors", facts.value("logs.device_plugin.errors", 0) + errs, at
            )
            if st.truncated_last_line:
                facts.put("logs.device_plugin.truncated", True, at)
        if key == "scheduler" and st.pods:
            facts.put("logs.scheduler.pod", st.pods[0], at)
