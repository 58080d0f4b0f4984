# The two set-up commands: `make demo` and `make test`. Each works alone on a fresh machine.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
TSTAMP  := $(VENV)/.installed-test

.PHONY: demo test test-slow lint bench export-gpu-bench bench-gpu gpu-bundle gpu-run test-gpu clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(TSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	# pycute (the pure-Python CuTe reference) for the benchmark's peer; no dependencies of its own.
	$(BIN)/pip install -q --no-deps 'nvidia-cutlass==4.2.0'
	touch $(STAMP) $@

demo: $(STAMP)
	$(BIN)/python -m patches demo

test: $(TSTAMP)
	$(BIN)/ruff check patches tests benchmarks
	$(BIN)/python -m pytest -q -n auto

# The long sweeps (kernel configurations, ...), deselected from `make test`.
test-slow: $(TSTAMP)
	$(BIN)/python -m pytest -q -n auto -m slow

bench: $(TSTAMP)
	$(BIN)/python benchmarks/layout_algebra.py
	$(BIN)/python benchmarks/staging.py

# GPU benchmark in two steps: export the kernels here (no GPU needed), run them where a GPU is (torch + nvcc).
GPU_BENCH ?= build/gpu-bench
export-gpu-bench: $(STAMP)
	$(BIN)/python benchmarks/export_gpu_bench.py --out $(GPU_BENCH)

bench-gpu:
	$(PY) benchmarks/gpu_gemm.py $(GPU_BENCH)

# Every kind of kernel for one GPU run: export here (no GPU), then on the GPU machine (torch + nvcc, no CuTe DSL)
# `make gpu-run` writes the correctness and speed tables to $$OUT (or build/gpu-run); `make test-gpu` is the
# gpu-marked tests over the same bundle. See docs/performance.md, "Running on an H100".
GPU_BUNDLE ?= build/gpu-bundle
gpu-bundle: $(STAMP)
	$(BIN)/python benchmarks/export_gpu_bench.py --bundle --out $(GPU_BUNDLE)

gpu-run:
	$(PY) benchmarks/gpu_run.py $(GPU_BUNDLE) --out $${OUT:-build/gpu-run}

test-gpu:
	GPU_BUNDLE=$(GPU_BUNDLE) $(PY) -m pytest -q --noconftest -p no:cacheprovider -m gpu tests/lower/test_gpu_run.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
