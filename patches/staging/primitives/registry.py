"""Declaring a primitive: its abstract-evaluation (layout) rule and numpy implementation, registered together."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import Primitive, abstract_eval_rules, impl_rules


def primitive(name: str, abstract: Callable, impl: Callable, **flags: bool) -> Primitive:
    p = Primitive(name, **flags)
    abstract_eval_rules[p] = abstract
    impl_rules[p] = impl
    return p


def checked_impl(abstract: Callable, impl: Callable) -> Callable:
    """An implementation that first applies the abstract rule to its operands' types, so eager calls refuse
    what staging refuses (a wrong dtype, an axis out of range) instead of computing something."""
    def run(*xs: Any, **params: Any) -> list:
        abstract(*(x.type for x in xs), **params)
        return impl(*xs, **params)
    return run
