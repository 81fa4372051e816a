"""The report: rule results assembled into one immutable, typed document."""
