"""The one exception type of the layout algebra."""

from __future__ import annotations


class LayoutError(ValueError):
    """Bad input to, or an inadmissible use of, the layout algebra; the message names what is wrong."""
