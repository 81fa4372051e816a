"""kube-scheduler's summary of why no node fits ("0/5 nodes are available: 4 node(s) didn't match
node selector."): how many candidate nodes its reasons leave out.

Each reason counts the nodes it rejected; the counts cover every unavailable node unless one was
rejected where the summary does not look: an extender (HAMi's, in some versions) that drops a node
without listing it as failed, or kube-scheduler versions that leave out the nodes a PreFilter
result excluded. A summary naming only selectors or taints may then still hide the GPU node's own
reason. Only a summary read to its end counts (its reasons end with a full stop): one folded over
lines in a pod's YAML shows its first line only."""

from __future__ import annotations

import re

from analyzer.bundle.text import item_counts
from analyzer.facts.matches import SignatureIndex
from analyzer.facts.model import FactSet, Where

FIT = "pod-failed-scheduling"
# the reasons' closing full stop (then "; waiting", a quote or nothing)
_WHOLE_RE = re.compile(r"\.\s*(?:$|[;\"'\\])")


def unlisted(n_avail: str, n_nodes: str, reasons: str) -> int | None:
    """Unavailable nodes no reason counts (0 when they are all counted); None when the summary's
    numbers are redacted or absent.

    >>> unlisted("0", "5", "4 node(s) didn't match node selector.; waiting")
    1
    >>> unlisted("0", "3", "1 node(s) had untolerated taint {a: }, 2 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    0
    >>> unlisted("0", "N", "N Insufficient nvidia.com/gpu.") is None
    True
    >>> unlisted("0", "3", "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane:") is None
    True
    """
    if not (n_avail.isdigit() and n_nodes.isdigit() and reasons) or len(n_nodes + n_avail) > 18:
        return None  # a longer number is no count of nodes (and int() refuses 4,300 digits)
    own = reasons.split("preemption:")[0].rstrip()
    if not _WHOLE_RE.search(own):
        return None  # cut or folded before its end: the rest may count the missing nodes
    counts = item_counts(own)
    if not counts:
        return None
    return max(int(n_nodes) - int(n_avail) - sum(counts), 0)


def produce(index: SignatureIndex, facts: FactSet) -> None:
    """
    >>> from analyzer.dev.samples import index_of
    >>> fs = FactSet(); produce(index_of({"s.log": "no fit: 0/5 nodes are available: 4 node(s) didn't match node selector.; waiting"}, "scheduler-log"), fs)
    >>> fs.value("scheduling.unlisted_nodes"), str(fs.where("scheduling.unlisted_nodes"))
    (1, 's.log:1')
    """
    facts.mark_known("scheduling.")
    most: tuple[int, Where] | None = None
    for m in sorted(index.matches.get(FIT, []), key=lambda m: (m.file, m.line)):
        c = m.captures
        n = unlisted(c.get("n_avail") or "", c.get("n_nodes") or "", c.get("reasons") or "")
        if n is not None and (most is None or n > most[0]):
            most = (n, Where(m.file, m.line))
    if most is not None:
        facts.put("scheduling.unlisted_nodes", most[0], most[1])
