"""LoweringError: a program (or a configuration) that patches.lower cannot turn into a kernel, and why."""

from __future__ import annotations


class LoweringError(ValueError):
    """Raised when a program or configuration cannot be lowered; the message names the equation or field at fault."""
