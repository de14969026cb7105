"""The terminal: rich views, plain lines for pipes, progress."""
