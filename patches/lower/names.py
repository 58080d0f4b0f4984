"""Safe text for generated code: identifiers come from counters, quoted program text is reduced to a comment-safe alphabet."""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_ %:.,;()\[\]{}=+\-*/<>@!?|&^~'\"#]")


def sanitize(text: str, limit: int = 200) -> str:
    """One line of printable ASCII that cannot end a comment or a string: other characters become '?'."""
    line = " ".join(str(text).split())
    line = _UNSAFE.sub("?", line).replace('"""', "'''").replace("\\", "?")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def comment_block(text: str, prefix: str = "# ") -> list[str]:
    """Each line of ``text`` sanitized and commented out."""
    return [(prefix + sanitize(line)).rstrip() for line in str(text).splitlines()]


def kernel_name(n: int, role: str = "gemm") -> str:
    """A generated identifier: the role (from our own vocabulary) and a counter."""
    if not role.isidentifier() or not role.isascii():
        raise ValueError(f"kernel_name: role must be an ASCII identifier, got {role!r}")
    return f"{role}_{n}"
