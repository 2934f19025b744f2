#!/usr/bin/env bash
# Build a triton_python_backend_stub for a target Python and Triton release.
# Thin wrapper around `triton-textops stub build` (implementation: triton_textops/tools/stub/); works from a
# source checkout without installing the package. All arguments are passed through, e.g.
#   stub_build/build_stub.sh --triton 24.10 --python /opt/conda/envs/py311/bin/python --no-gpu --output ./stub/
#   stub_build/build_stub.sh --triton 24.10 --python 3.11 --dry-run
#   stub_build/build_stub.sh --triton 24.10 --python python3.11 --no-gpu --offline --boost /usr/include \
#       --python-backend-src src/python_backend --common-src src/common --core-src src/core \
#       --backend-src src/backend --pybind11-src src/pybind11 --dlpack-src src/dlpack --googletest-src src/googletest
#   (the offline r24.10 build recorded in stub_build/README.md; --cmake-arg=-DNAME=VALUE adds configure flags)
# Set PYTHON to choose the interpreter that RUNS this tool (default python3; the stub's Python is --python).
set -euo pipefail
src="${BASH_SOURCE[0]}"
if [[ "$src" == */* ]]; then dir="${src%/*}"; else dir=.; fi
here="$(cd "$dir" && pwd)"  # shell builtins only: works with a minimal PATH
export PYTHONPATH="${here%/*}${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" -m triton_textops.tools.stub stub build "$@"
