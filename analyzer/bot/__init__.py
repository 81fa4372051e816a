"""The issue bot behind the GitHub Action (action.yml): decide whether an issue deserves a
comment (decide.py), talk to GitHub through the `gh` CLI (github.py), and run one event
end to end (run.py)."""
