"""Declaring a primitive: its abstract-evaluation (layout) rule and numpy implementation, registered together."""

from __future__ import annotations

from collections.abc import Callable

from ..core import Primitive, abstract_eval_rules, impl_rules


def primitive(name: str, abstract: Callable, impl: Callable, **flags: bool) -> Primitive:
    p = Primitive(name, **flags)
    abstract_eval_rules[p] = abstract
    impl_rules[p] = impl
    return p
