"""The operator's tools: what runs, builds, packs and deploys servers, never imported by a served model.

* :mod:`.server`: :class:`~triton_textops.tools.server.TritonServer` and ``triton-textops serve`` (a real
  tritonserver on loopback); :mod:`.probe`: ``triton-textops probe``, the real liveness check;
* :mod:`.repo`: ``triton-textops repo create`` (the seed's ``ensemble_all`` repository);
* :mod:`.stub`: ``triton-textops stub build``; :mod:`.envs`: ``triton-textops env pack|check|spec`` (packages,
  one module per layer);
* :mod:`.deploy`: ``triton-textops deploy kserve|sagemaker``;
* :mod:`.features_cli`: ``triton-textops fit-features``;
* :mod:`.interpreter` (:class:`~triton_textops.tools.interpreter.PythonInfo`, ``--python`` lookup) and
  :mod:`.proc` (:func:`~triton_textops.tools.proc.run`, the one subprocess runner), shared by all of the above;
* :mod:`.example`: the trained readability example (``triton-textops example readability``) and its ``demo``.

The library layers (``ops``, ``models``, ``triton``, ``testing``) never import from here.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def import_client(protocol: str) -> ModuleType:
    """``tritonclient.http`` or ``tritonclient.grpc``. A tritonclient installed without that protocol raises
    RuntimeError on import; this raises ModuleNotFoundError instead, which the CLI turns into one line naming
    the extra."""
    try:
        return importlib.import_module(f"tritonclient.{protocol}")
    except RuntimeError as exc:
        if "does not include" not in str(exc):
            raise
        # named after the protocol's own client library (the extra that carries it), whichever of its modules failed
        missing = "grpc" if protocol == "grpc" else "geventhttpclient"
        raise ModuleNotFoundError(f"tritonclient has no {protocol} support ({exc})", name=missing) from None
