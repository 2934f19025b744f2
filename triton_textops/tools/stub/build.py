"""Running the build: check the requirements, clone, configure, build, install and verify the stub."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from triton_textops.tools.proc import run
from triton_textops.tools.stub.elf import Verification, verify_stub
from triton_textops.tools.stub.plan import StubPlan
from triton_textops.tools.stub.releases import STUB_NAME
from triton_textops.tools.stub.requirements import Check, check_requirements


class BuildError(RuntimeError):
    """A requirement is missing, a command failed, or the result does not link the intended libpython."""


@dataclass(frozen=True)
class BuildResult:
    """Where the stub went and what verification found."""

    stub: Path
    verification: Verification
    checks: tuple[Check, ...]


def _run(cmd: Sequence[str], log: Callable[[str], None]) -> None:
    """A build step: its command logged, its output kept in order, its failure a BuildError with the tail."""
    run(cmd, error=BuildError, log=log, merge_output=True)


def build_stub(plan: StubPlan, *, log: Callable[[str], None] = print) -> BuildResult:
    """Check requirements, clone, configure, build the stub target, install it at plan.output, verify it."""
    checks = check_requirements(plan)
    for c in checks:
        log(c.render())
    missing = [c for c in checks if not c.ok]
    if missing:
        raise BuildError("missing requirements:\n" + "\n".join(c.render() for c in missing))
    if plan.clone:
        if (plan.source_dir / ".git").exists():
            head = subprocess.run(["git", "-C", str(plan.source_dir), "rev-parse", "--abbrev-ref", "HEAD"],
                                  capture_output=True, text=True).stdout.strip()
            if head != plan.release.branch:
                raise BuildError(f"{plan.source_dir} is a checkout of {head!r}, not {plan.release.branch}; "
                                 "remove it or use another --work-dir")
            log(f"reusing checkout {plan.source_dir} ({head})")
        else:
            plan.work_dir.mkdir(parents=True, exist_ok=True)
            _run(plan.clone, log)
    elif not (plan.source_dir / "CMakeLists.txt").is_file():
        raise BuildError(f"{plan.source_dir} has no CMakeLists.txt (not a python_backend checkout)")
    if plan.boost is not None:
        plan.boost.apply()
        log(f"boost: {plan.boost.source.describe()} via {plan.boost.mechanism}")
    _run(plan.configure, log)
    if plan.boost is not None and plan.boost.marker is not None and not plan.boost.marker.is_file():
        raise BuildError(f"configure did not apply the boost override (no {plan.boost.marker}): the build would "
                         f"download boost. Is {plan.source_dir} python_backend {plan.release.branch} (project "
                         "tritonpythonbackend, ExternalProject boostorg)?")
    _run(plan.build, log)
    built = plan.build_dir / STUB_NAME
    if not built.is_file():
        raise BuildError(f"the build finished but {built} does not exist")
    plan.output.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built, plan.output)
    os.chmod(plan.output, 0o755)
    ver = verify_stub(plan.output, plan.python)
    cudart = [n for n in ver.info.needed if n.startswith("libcudart")]
    if plan.gpu and not cudart:
        ver = Verification(False, ver.info, (*ver.messages, "built with TRITON_ENABLE_GPU=ON but the stub does "
                                             "not link libcudart"))
    elif cudart:
        ver = Verification(ver.ok, ver.info, (*ver.messages, f"GPU build: needs {', '.join(cudart)} at run time"))
    for m in ver.messages:
        log(m)
    if not ver.ok:
        raise BuildError("verification failed: " + "; ".join(ver.messages))
    return BuildResult(plan.output, ver, tuple(checks))


