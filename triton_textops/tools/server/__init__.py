"""Run a real NVIDIA Triton Inference Server on a model repository (tests, the demo, benchmarks).

Where the server comes from, in order (:mod:`.install`):

1. ``$TRITON_TEXTOPS_SERVER`` (path to a ``tritonserver`` binary), ``tritonserver`` on ``PATH`` or
   ``/opt/tritonserver/bin/tritonserver`` (the NGC container layout): used as installed.
2. Otherwise Triton 2.51.0 (container 24.10) is taken from the PyPI wheel ``nvidia-pytriton==0.7.0``: the wheel
   is fetched with ``pip download --no-deps`` and only the server, the Python backend, the stubs and the bundled
   shared libraries are unpacked into a cache directory. pytriton's Python package (which pins ``numpy<2``) is
   never installed into the calling environment.

The 24.10 Python-backend stub has two constraints that shape this package:

* it is built with pybind11 2.10 and breaks with NumPy 2, so models must run in an environment with ``numpy<2``;
* for Python >= 3.11 it runs the interpreter isolated (``PYTHONPATH`` ignored) and takes ``sys.prefix`` from the
  first ``python3`` on ``PATH``.

So models run in a separate, cached "model runtime" virtual environment (:mod:`.runtime_env`:
:func:`model_runtime_env`, ``numpy<2`` plus this package, linked from its source location) whose ``bin/`` is put
first on the server's ``PATH``. A repository written by ``triton-textops repo create`` / ``example readability``
records what its python models import besides (``requirements.txt`` at its top); those packages go into that env,
so such a repository serves as written.

Each server gets its own prefix for the Python backend's shared-memory regions (:mod:`.shm`), and
:meth:`TritonServer.stop` removes the regions of that prefix from ``/dev/shm`` once the server has exited, also
after a failed start or a killed server (Docker's default ``/dev/shm`` is 64 MB: leftover 1-3 MiB regions of a few
dozen restarts make every python model fail to load). :mod:`.process` runs the server (readiness through
``tritonclient.http``), :mod:`.cli` is ``triton-textops serve``.

Cache layout (:mod:`.cache`; ``$TRITON_TEXTOPS_CACHE``, default ``$XDG_CACHE_HOME/triton-textops`` or
``~/.cache/triton-textops``)::

    tritonserver-2.51.0/                   unpacked server (created in a temp dir, renamed into place)
        pytriton/tritonserver/bin/tritonserver
        pytriton/tritonserver/backends-py3.11/python/   backend dir with the 3.11 stub placed (0755)
        nvidia_pytriton.libs/
    model-env-py3.11-<hash>/              model runtime venv (complete once ``.complete`` exists)
"""

from __future__ import annotations

from triton_textops.tools.server.cache import cache_dir
from triton_textops.tools.server.cli import add_parser
from triton_textops.tools.server.errors import TritonServerError, load_failures
from triton_textops.tools.server.install import (
    PYTRITON_REQUIREMENT,
    TRITON_VERSION,
    ServerInstall,
    find_server,
    install_server,
)
from triton_textops.tools.server.process import TritonServer, free_port, port_is_free
from triton_textops.tools.server.runtime_env import (
    RUNTIME_REQUIREMENTS,
    model_runtime_env,
    repository_runtime_env,
)
from triton_textops.tools.server.shm import SHM_DIR, SHM_PREFIX, remove_shm_regions, shm_regions

__all__ = [  # every public name of the module this package replaced
    "TritonServerError", "load_failures", "cache_dir", "TRITON_VERSION", "PYTRITON_REQUIREMENT",
    "RUNTIME_REQUIREMENTS", "ServerInstall", "install_server", "find_server", "model_runtime_env",
    "repository_runtime_env", "SHM_DIR", "SHM_PREFIX", "shm_regions", "remove_shm_regions", "free_port",
    "port_is_free", "TritonServer", "add_parser",
]
