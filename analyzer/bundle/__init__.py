"""Reading a bundle: inputs to files on disk, recognised by content."""
