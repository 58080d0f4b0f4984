"""Tile configurations of the Hopper GEMM kernels: CTA tile, cluster, pipeline stages, and the default heuristic.

Stages come from the shared-memory capacity: whatever the epilogue buffer and the barriers leave is split into
as many (A, B) stages as fit. The heuristic picks a CTA tile per problem shape (few waves, little padding).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .errors import LoweringError

SMEM_CAPACITY = 232448          # bytes of shared memory per CTA on sm_90 (227 KiB)
BARRIER_BYTES = 1024            # mbarriers and alignment slack
NUM_SMS = 132                   # H100 SXM; HardwareInfo() needs a GPU, so this is a constant
TILES_MN = ((64, 64), (64, 128), (128, 64), (128, 128), (64, 256), (128, 256), (256, 128))
CLUSTERS = ((1, 1), (2, 1), (1, 2))
DTYPE_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "tf32": 4}


@dataclass(frozen=True)
class TileConfig:
    """One kernel configuration; ``stages=0`` means "as many as shared memory holds", ``tile_k=0`` "one 128-byte
    swizzle row of the operands" (64 for bf16/f16, 32 for f32 as tf32)."""

    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 0
    cluster_m: int = 1
    cluster_n: int = 1
    stages: int = 0
    persistent: bool = False

    def __post_init__(self) -> None:
        check_fields(self)  # a configuration the template does not implement is refused where it is written

    @property
    def tile(self) -> tuple[int, int, int]:
        return (self.tile_m, self.tile_n, self.tile_k)

    @property
    def cluster(self) -> tuple[int, int]:
        return (self.cluster_m, self.cluster_n)

    @property
    def mma_warpgroups(self) -> int:
        """Math warpgroups, stacked along M (each owns tile_m / warpgroups rows of the accumulator)."""
        return 2 if self.tile_m >= 128 else 1

    @property
    def epi_tile(self) -> tuple[int, int]:
        """The epilogue's smem/TMA-store subtile (M, N): one 64-row slab per warpgroup, 32 columns."""
        return (min(self.tile_m, 64 * self.mma_warpgroups), min(32, self.tile_n))

    def describe(self) -> str:
        s = f"{self.tile_m}x{self.tile_n}x{self.tile_k} c{self.cluster_m}x{self.cluster_n} s{self.stages}"
        return s + (" persistent" if self.persistent else "")


EPI_STAGES = 2


def check_fields(cfg: TileConfig) -> None:
    """Refuse field values the kernel template does not implement (for any dtype), naming the field."""
    for f in ("tile_m", "tile_n", "tile_k", "cluster_m", "cluster_n", "stages"):
        v = getattr(cfg, f)
        if type(v) is not int:
            raise LoweringError(f"TileConfig.{f} must be an int, got {type(v).__name__} {v!r}")
    if type(cfg.persistent) is not bool:
        raise LoweringError(f"TileConfig.persistent must be a bool, got {cfg.persistent!r}")
    if (cfg.tile_m, cfg.tile_n) not in TILES_MN:
        raise LoweringError(f"CTA tile {cfg.tile_m}x{cfg.tile_n} is not supported; choose one of "
                            + ", ".join(f"{m}x{n}" for m, n in TILES_MN))
    if cfg.tile_k not in {0} | {128 // b for b in DTYPE_BYTES.values()}:
        raise LoweringError(f"tile_k must be 64 (16-bit operands) or 32 (32-bit), one 128-byte swizzle row, or 0 (that "
                            f"row for the operands' dtype); got {cfg.tile_k}")
    if cfg.cluster not in CLUSTERS:
        raise LoweringError(f"cluster {cfg.cluster_m}x{cfg.cluster_n} is not supported; choose 1x1, 2x1 or 1x2")
    if cfg.stages < 0 or cfg.stages == 1:
        raise LoweringError(f"stages must be 0 (from smem capacity) or at least 2, got {cfg.stages}")


def check_config(cfg: TileConfig, ab_dtype: str) -> None:
    """Refuse configurations the kernel template does not implement, naming the field."""
    check_fields(cfg)
    if cfg.tile_k * DTYPE_BYTES[ab_dtype] != 128:
        raise LoweringError(f"tile_k must be {128 // DTYPE_BYTES[ab_dtype]} for {ab_dtype} (one 128-byte swizzle row), "
                            f"got {cfg.tile_k}")


def smem_bytes(cfg: TileConfig, ab_dtype: str, c_dtype: str, stages: int) -> int:
    """Shared memory the kernel allocates: A and B stages, the epilogue buffers, the barriers."""
    ab = (cfg.tile_m + cfg.tile_n) * cfg.tile_k * DTYPE_BYTES[ab_dtype] * stages
    em, en = cfg.epi_tile
    return ab + em * en * DTYPE_BYTES[c_dtype] * EPI_STAGES + BARRIER_BYTES


def resolve_stages(cfg: TileConfig, ab_dtype: str, c_dtype: str) -> TileConfig:
    """Fill in the stage count from the capacity (at most 8), or check that the one given fits."""
    per_stage = (cfg.tile_m + cfg.tile_n) * cfg.tile_k * DTYPE_BYTES[ab_dtype]
    fixed = smem_bytes(cfg, ab_dtype, c_dtype, 0)
    fit = (SMEM_CAPACITY - fixed) // per_stage
    if cfg.stages == 0:
        if fit < 2:
            raise LoweringError(f"tile {cfg.describe()} leaves room for {fit} pipeline stage(s); at least 2 are needed")
        return replace(cfg, stages=min(fit, 8))
    if cfg.stages > fit:
        raise LoweringError(f"{cfg.stages} stages of {per_stage} bytes do not fit in shared memory "
                            f"({SMEM_CAPACITY} bytes, {fixed} taken by epilogue and barriers); at most {fit}")
    return cfg


def default_config(m: Any, n: Any, k: Any, batch: Any = 1) -> TileConfig:
    """The heuristic: the largest tile that still gives every SM work; small problems get small tiles. Two or more
    waves of tiles go persistent with 2x1 clusters (B multicast to the M-neighbour; the next tile's loads overlap
    this tile's epilogue). Measured on an H100 (docs/performance.md): at 4096^3 and 8192^3 that is 0.99-1.00x
    cuBLAS, where persistent without a cluster is 0.87-0.92x and one launch per tile 0.97x.

    Symbolic extents count as large (a kernel for all M is tuned for big M).
    """
    def big(x: Any) -> int:
        return x if isinstance(x, int) else 1 << 20

    mm, nn, ll = big(m), big(n), big(batch)
    for tm, tn in ((128, 256), (256, 128), (128, 128), (128, 64), (64, 128), (64, 64)):
        if tm == 256 and mm < nn:
            continue
        ctas = -(-mm // tm) * -(-nn // tn) * ll
        if ctas >= NUM_SMS or (tm, tn) == (64, 64):
            waves = ctas >= 2 * NUM_SMS and -(-mm // tm) >= 2
            return TileConfig(tm, tn, 64, cluster_m=2 if waves else 1, persistent=waves)
    return TileConfig(64, 64, 64)
