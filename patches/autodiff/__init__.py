"""Autodiff: jvp, linearize, transpose, vjp, grad and vmap on staged programs (lands with the autodiff issue)."""
