"""The mock's pure-Python layer is upstream's r24.10 file, verbatim (issue 48): the same bytes as the server's copy,
and the mock re-types none of it."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import triton_textops.testing._vendor.triton_python_backend_utils as upstream
from triton_textops.testing import pb_utils
from triton_textops.tools.server import TRITON_VERSION, cache_dir

VENDORED = Path(upstream.__file__)
RELEASE = "24.10"  # python_backend branch of the vendored file (Triton 2.51.0)


def _server_copies() -> list[Path]:
    """The server's own triton_python_backend_utils.py: the wheel install the tools unpack (2.51.0), and an NGC
    container's /opt/tritonserver when it is the same release."""
    wheel = cache_dir() / f"tritonserver-{TRITON_VERSION}"
    out = []
    if (wheel / ".complete").is_file():
        out.append(wheel / "pytriton/tritonserver/backends/python/triton_python_backend_utils.py")
    if os.environ.get("NVIDIA_TRITON_SERVER_VERSION") == RELEASE:
        out.append(Path("/opt/tritonserver/backends/python/triton_python_backend_utils.py"))
    return [p for p in out if p.is_file()]


def test_vendored_file_is_the_servers_copy() -> None:
    copies = _server_copies()
    if not copies:
        pytest.skip(f"no Triton {TRITON_VERSION} server tree here (triton-textops serve / the server tests unpack it)")
    for copy in copies:
        assert copy.read_bytes() == VENDORED.read_bytes(), f"{VENDORED} differs from {copy}"


def test_vendored_file_keeps_its_licence_and_provenance() -> None:
    text = VENDORED.read_text(encoding="utf-8")
    assert text.startswith("# Copyright 2020-2023, NVIDIA CORPORATION & AFFILIATES. All rights reserved.")
    assert "Redistribution and use in source and binary forms" in text
    provenance = (VENDORED.parent / "PROVENANCE.md").read_text(encoding="utf-8")
    assert f"r{RELEASE}" in provenance and "src/resources/triton_python_backend_utils.py" in provenance


def _public_names(path: Path) -> list[str]:
    names = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_")]


def test_the_mock_takes_the_pure_layer_from_upstream_and_redefines_none_of_it() -> None:
    names = _public_names(VENDORED)
    assert {"ModelConfig", "serialize_byte_tensor", "TRITON_STRING_TO_NUMPY", "get_input_tensor_by_name"} <= set(names)
    assert [n for n in names if getattr(pb_utils, n, None) is not getattr(upstream, n)] == []
    mock_source = Path(pb_utils.__file__)
    assert sorted(set(names) & set(_public_names(mock_source))) == []
