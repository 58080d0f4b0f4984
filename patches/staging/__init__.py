"""Staging: trace Python functions into a layout-typed IR (lands with the staging issue)."""
