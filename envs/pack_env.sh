#!/usr/bin/env bash
# Build and pack a Python execution environment for EXECUTION_ENV_PATH (conda + conda-pack when conda exists,
# else venv + venv-pack), then check it. Thin wrapper around `triton-textops env pack` (implementation:
# triton_textops/tools/envs/); works from a source checkout without installing the package. Examples:
#   envs/pack_env.sh --triton 24.10 --python 3.11 --kind cpu -o custom_env.tar.gz
#   envs/pack_env.sh --triton 24.10 --stub ./stub/triton_python_backend_stub --kind gpu --dir -o model/env
# Set PYTHON to choose the interpreter that RUNS this tool (it needs venv-pack or conda-pack).
set -euo pipefail
src="${BASH_SOURCE[0]}"
if [[ "$src" == */* ]]; then dir="${src%/*}"; else dir=.; fi
here="$(cd "$dir" && pwd)"
export PYTHONPATH="${here%/*}${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" -m triton_textops.tools.envs env pack "$@"
