"""The issue bot behind the GitHub Action (action.yml): decide whether an issue deserves a
comment and whose comments to read (decide.py), talk to GitHub through the `gh` CLI
(github.py), fetch the files attached to the issue (attachments.py), and run one event end to
end (run.py); the thread itself becomes one bundle in analyzer/bundle/thread.py."""
