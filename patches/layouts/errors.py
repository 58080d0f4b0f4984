"""The one exception type of the layout algebra."""

from __future__ import annotations


class LayoutError(ValueError):
    """Bad input to, or an inadmissible use of, the layout algebra; the message names what is wrong."""


class UndecidableError(LayoutError):
    """A decision on symbolic values that the facts do not settle; the message names the fact that would."""
