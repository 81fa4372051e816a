"""`python -m analyzer`, and the `hami-analyzer` console script (pyproject.toml)."""

from analyzer import startup

startup.begin()  # before the command line's modules are imported

from analyzer.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
