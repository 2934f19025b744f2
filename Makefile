# Two entry points that work on a fresh machine with only python3:
#   make test   - the full test suite (GPU tests skip cleanly without a GPU)
#   make demo   - the main job
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test demo lint venv clean hooks bench-check wheel

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml
	@echo "[1/2] upgrading pip in $(VENV)"
	$(PY) -m pip install -q --upgrade pip
	@echo "[2/2] installing triton-textops[dev,server,example,deploy] into $(VENV) (a few minutes the first time)"
	$(PY) -m pip install --progress-bar on -e '.[dev,server,example,deploy]'
	touch $(STAMP)

venv: $(STAMP)

# pytest-xdist workers (CI has 2 cores; each test module runs in one worker, so its fixtures are made once)
TEST_JOBS ?= 2
XDIST := -n $(TEST_JOBS) --dist loadfile

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) scripts/check_commit_subjects.py
	# the KServe SDK's protobuf symbols clash with tritonclient.grpc's: its tests get their own process
	$(PY) -m pytest -q $(XDIST) --durations=15 tests --ignore=tests/deploy/test_kserve.py
	$(PY) -m pytest -q tests/deploy/test_kserve.py
	# the GPU kernels in numba-cuda's CUDA simulator, and the kernels with bounds checking: own processes
	# (both variables must be set before numba is imported; bounds-checked code gets its own cache)
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest -q $(XDIST) tests/sim
	NUMBA_BOUNDSCHECK=1 NUMBA_CACHE_DIR=$(CURDIR)/.cache/numba-boundscheck $(PY) -m pytest -q $(XDIST) tests/bounds

# the wall-clock ratio tests (marked `timing`; make test skips them: noisy on shared CI cores)
bench-check: $(STAMP)
	$(PY) -m pytest -q --timing -m timing tests --ignore=tests/deploy/test_kserve.py

# make demo [ARGS=excerpts.txt | ARGS=-]: train (cached in .cache/demo), serve in a real tritonserver, score
# (--backends python: bert-large and cuml as Python stand-ins, since the wheel's server has only that backend)
demo: $(STAMP)
	$(PY) -m triton_textops.cli demo --backends python $(ARGS)

# the wheel of this checkout: dist/triton_textops-<version>-py3-none-any.whl (pip install 'dist/<wheel>[server]')
wheel: $(PY)
	$(PY) -m pip wheel --no-deps -w dist .

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) scripts/check_commit_subjects.py

# git runs scripts/hooks/commit-msg on each commit: subjects over 72 characters are refused
hooks:
	git config core.hooksPath scripts/hooks

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
