"""Lowering staged programs to CuTe DSL Hopper (sm_90a) kernels.

Modules, in the order a program flows through them: ``errors`` (LoweringError), ``config`` (TileConfig, stage
count, the default heuristic), ``spec`` (the kernel description), ``analyze`` (program -> GemmSpec: matmul,
operand majorness from layouts, epilogue), ``names`` (safe text for generated code), ``emit_gemm`` (the CuTe
DSL source), ``module`` (Module, Executable: compile, PTX/SASS, resources), ``runtime`` (calls on a GPU),
``export`` (ahead-of-time C export and loader), ``simulate`` (numpy model of the kernel), ``emit_persistent``
(the persistent warp-specialized variant), ``simt_spec``/``emit_simt``/``simulate_simt`` (fused SIMT row kernels for
programs without a matmul), ``fusion`` (the fusion rules: which equations share a kernel; rematerialization),
``schedule`` (whole programs -> kernels as complete sub-programs, buffers), ``plan`` (Schedule, Kernel,
ScheduleExecutable: print, simulate, compile, verify), ``run_schedule``/``export_schedule`` (a schedule on a GPU,
ahead of time), ``programs`` (whole programs to lower: MLP, softmax, layernorm, attention), ``api`` (lower).
"""

from . import device  # noqa: F401 (installs pt.kernel(interpret=False)'s runner)
from .analyze import analyze
from .api import lower, split_matmuls
from .config import TileConfig, default_config
from .errors import LoweringError
from .module import Executable, Module
from .plan import Kernel, Schedule, ScheduleExecutable
from .simulate import simulate
from .simulate_simt import simulate_simt
from .spec import GemmSpec

__all__ = ["Executable", "GemmSpec", "Kernel", "LoweringError", "Module", "Schedule", "ScheduleExecutable", "TileConfig",
           "analyze", "default_config", "lower", "simulate", "simulate_simt", "split_matmuls"]
