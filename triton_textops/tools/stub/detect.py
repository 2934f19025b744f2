"""Which release to build for: --triton, $NVIDIA_TRITON_SERVER_VERSION or a running server's `GET /v2`."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping

from triton_textops.errors import InputError
from triton_textops.tools.stub.releases import Release, release_for_server, resolve_release


def release_from_server(url: str, timeout: float = 5.0) -> tuple[Release, str]:
    """Ask a running server (`GET <url>/v2`, the metadata endpoint) for its version; returns (release, version)."""
    base = url if "://" in url else f"http://{url}"
    endpoint = base.rstrip("/") + "/v2"
    try:
        with urllib.request.urlopen(endpoint, timeout=timeout) as resp:
            meta = json.loads(resp.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise InputError(f"cannot read server metadata from {endpoint}: {exc}") from exc
    version = str(meta.get("version", ""))
    if not version:
        raise InputError(f"{endpoint} answered without a 'version' field: {meta!r}")
    return release_for_server(version), version


def detect_release(
    triton: str | None = None, server_url: str | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Release, str]:
    """Target release from (in order) `--triton`, a running server, NVIDIA_TRITON_SERVER_VERSION / TRITON_SERVER_VERSION.

    Returns the release and a sentence saying where it came from.
    """
    env = os.environ if environ is None else environ
    if triton:
        return resolve_release(triton), f"given: {triton}"
    if server_url:
        rel, version = release_from_server(server_url)
        return rel, f"server {server_url} reports version {version}"
    for var in ("NVIDIA_TRITON_SERVER_VERSION", "TRITON_SERVER_VERSION"):
        if env.get(var):
            return resolve_release(env[var]), f"${var}={env[var]}"
    raise InputError(
        "no target Triton release: pass --triton 24.10 (or a server version such as 2.51.0), "
        "--server-url http://HOST:8000, or run inside the tritonserver container (NVIDIA_TRITON_SERVER_VERSION)"
    )


