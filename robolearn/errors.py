"""The one exception type for mistakes a user can fix.

The CLI prints a `UserError` as one line (no traceback) and exits non-zero; everything else is a
bug and keeps its traceback.
"""


class UserError(Exception):
    """A wrong task name, override, asset, checkpoint, ...: the message says what and what is valid."""


def one_line(text: str) -> str:
    """Collapse a (possibly multi-line) message from a library into a single line."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())
