#!/usr/bin/env bash
# One prepared GPU check for a lent device machine (CuPy 14, numpy 2, Python 3.12, no internet there).
# It runs the `gpu`-marked tests and the GPU benchmarks and writes everything under $OUT.
#
# Prepare here (wheels the device image may lack: the pinned tokenizers oracle, tritonclient's config schema,
# and the test runner with hypothesis, which tests/ops imports):
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d .whl tokenizers==0.22.2 tritonclient==2.73.0 pytest pluggy iniconfig packaging hypothesis \
#     sortedcontainers attrs
# Then call the device tool's `run` with carry [".whl"] and: bash benchmarks/gpu_check.sh
set -u
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 --version;
  python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"; } > "$OUT/machine.txt" 2>&1
timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider -p no:triton_textops tests/ops tests/models tests/testing 2>&1 | tee "$OUT/pytest-gpu.txt"
timeout 150 python3 benchmarks/tokenizer.py --quick 2>&1 | tee "$OUT/bench-tokenizer.txt"
timeout 120 python3 benchmarks/placement.py --rounds 5 2>&1 | tee "$OUT/bench-placement.txt"
timeout 120 python3 benchmarks/bpe.py --gpu 2>&1 | tee "$OUT/bench-bpe-gpu.txt"
if [ -f benchmarks/features.py ]; then
  timeout 100 python3 benchmarks/features.py 2>&1 | tee "$OUT/bench-features.txt"
fi
echo "gpu_check done"
