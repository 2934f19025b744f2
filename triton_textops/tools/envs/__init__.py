"""`triton-textops env pack|check|spec`: the execution environment a python model runs in (EXECUTION_ENV_PATH).

Why: a model that needs cupy/cudf/triton-textops in a Python other than the container's runs with
`EXECUTION_ENV_PATH` pointing at a packed environment. What goes wrong in practice: the env's Python minor differs
from the stub's, numpy 2 with a stub built before r24.11, no `bin/activate`, build-machine absolute paths left in
the env (plain tar of a venv, editable installs), an old `libstdc++` in a conda env (GLIBCXX_3.4.30/32 not found).
`pack` builds the env (conda + conda-pack when conda exists, else venv + venv-pack) and `check` verifies all of the
above on a tarball or a directory. One module per layer: `spec`, `inspect`, `check`, `pack`, `repository` (the env
a repository's models share) and `cli`. `envs/pack_env.sh` is a thin wrapper around `pack`.
"""

from __future__ import annotations

from triton_textops.tools.envs.check import EnvReport, Finding, check_env
from triton_textops.tools.envs.cli import add_parser, main, run_check, run_pack, run_spec
from triton_textops.tools.envs.inspect import (
    find_build_paths,
    open_env,
    probe_env,
)
from triton_textops.tools.envs.pack import (
    PackPlan,
    default_textops_source,
    installed_distribution,
    make_pack_plan,
    pack_env,
    wheel_from_installed,
)
from triton_textops.tools.envs.repository import (
    REPOSITORY_RELEASE,
    add_pack_env_options,
    pack_env_options,
    pack_repository_env,
)
from triton_textops.tools.envs.spec import (
    ARCHIVE_CHECK_FIRST_RELEASE,
    BACKEND_MODULES,
    CUDF_PIP,
    GPU_PIP,
    libstdcxx_requirement,
    package_dependencies,
    pip_requirements,
    render_spec,
    required_glibcxx,
)

__all__ = [  # every public name of the module this package replaced
    "ARCHIVE_CHECK_FIRST_RELEASE", "BACKEND_MODULES", "GPU_PIP", "CUDF_PIP",
    "libstdcxx_requirement", "required_glibcxx", "pip_requirements",
    "package_dependencies", "render_spec", "open_env", "probe_env",
    "find_build_paths", "Finding", "EnvReport", "check_env", "PackPlan",
    "default_textops_source", "installed_distribution", "wheel_from_installed", "make_pack_plan", "pack_env",
    "REPOSITORY_RELEASE", "add_pack_env_options", "pack_env_options", "pack_repository_env", "add_parser",
    "run_check", "run_spec", "run_pack", "main",
]
