"""The one exception type for mistakes a user can fix.

The CLI prints a `UserError` as one line (no traceback) and exits non-zero; everything else is a
bug and keeps its traceback.
"""

import errno

FULL_DISK = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "the disk quota is used up"}


class UserError(Exception):
    """A wrong task name, override, asset, checkpoint, ...: the message says what and what is valid."""


def one_line(text: str) -> str:
    """Collapse a (possibly multi-line) message from a library into a single line."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def disk_full(exc: BaseException | None) -> str | None:
    """"no space left on the device[ writing <file>]" where a full disk or quota caused `exc`,
    anywhere in its chain (torch's checkpoint writer raises an error of its own from it); else None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, OSError) and exc.errno in FULL_DISK:
            return FULL_DISK[exc.errno] + (f" writing {exc.filename}" if exc.filename else "")
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None
