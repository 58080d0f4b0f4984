"""Lowering: staged programs to CuTe DSL Hopper kernels (lands with the lowering issue)."""
