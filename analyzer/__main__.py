"""`python -m analyzer`, and the `hami-analyzer` console script (pyproject.toml)."""

from analyzer import startup

startup.begin()  # before the command line's modules are imported


def main() -> None:
    """The command line, its modules imported and run on one block of frames
    (`startup.on_a_wide_stack`)."""
    startup.on_a_wide_stack(_main)


def _main() -> None:
    from analyzer.cli import main as command_line

    command_line()


if __name__ == "__main__":
    main()
