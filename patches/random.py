"""``patches.random``: ``jax.random``'s keys and draws (``PRNGKey``, ``split``, ``fold_in``, ``uniform``,
``normal``, ``randint``, ``bernoulli``, ``categorical``, ``permutation``, ``choice``, ...), Threefry-2x32 bits as
JAX computes them (``staging.primitives.threefry``, ``distributions``; the gamma family, which needs ``while_loop``
and ``vmap``, in ``autodiff.rejection_draws``)."""

from .autodiff.rejection_draws import (
    ball,
    beta,
    binomial,
    chisquare,
    dirichlet,
    f,
    gamma,
    generalized_normal,
    loggamma,
    multinomial,
    poisson,
    t,
)
from .staging.primitives.distributions import (
    bernoulli,
    categorical,
    cauchy,
    choice,
    double_sided_maxwell,
    exponential,
    geometric,
    gumbel,
    laplace,
    logistic,
    lognormal,
    maxwell,
    multivariate_normal,
    normal,
    orthogonal,
    pareto,
    permutation,
    rademacher,
    randint,
    rayleigh,
    triangular,
    truncated_normal,
    uniform,
    wald,
    weibull_min,
)
from .staging.primitives.threefry import PRNGKey, bits, fold_in, key, key_data, split, threefry_2x32, wrap_key_data

__all__ = ["ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy", "chisquare", "choice",
           "dirichlet", "double_sided_maxwell", "exponential", "f", "fold_in", "gamma", "generalized_normal",
           "geometric", "gumbel", "key", "key_data", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
           "multinomial", "multivariate_normal", "normal", "orthogonal", "pareto", "permutation", "poisson",
           "PRNGKey", "rademacher", "randint", "rayleigh", "split", "t", "threefry_2x32", "triangular",
           "truncated_normal", "uniform", "wald", "weibull_min", "wrap_key_data"]
