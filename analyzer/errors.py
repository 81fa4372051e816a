"""User-facing errors: each carries one line that the CLI prints instead of a traceback."""


class AnalyzerError(Exception):
    """An input or usage problem the user can fix; the message is one line."""


class BundleError(AnalyzerError):
    """The bundle cannot be read (missing path, hostile archive, limits exceeded)."""


class RuleLoadError(AnalyzerError):
    """A rule file is invalid; messages name the file and line."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(problems[0] if len(problems) == 1 else f"{len(problems)} rule problems")
