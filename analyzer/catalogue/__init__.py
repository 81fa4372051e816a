"""The catalogue: the data files of rules/ that are not rules (kinds.yaml, timeline.yaml,
decisions.yaml, annotations.yaml), the signature type and the phrases of messages.yaml, loaded
and validated with `file:line` errors by declared field tables. It sits below the bundle layer
(recognition reads the kinds) and knows nothing of rules, parsing or analysis."""
