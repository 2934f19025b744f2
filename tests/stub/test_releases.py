"""Release / server-version mapping, default Python and numpy bounds, and release detection."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from triton_textops.errors import InputError
from triton_textops.tools.stub import (
    LAST_KNOWN_RELEASE,
    Release,
    default_python_for,
    detect_release,
    numpy_requirement,
    parse_release,
    release_for_server,
    resolve_release,
    server_version_for,
)

# Spot values from the documented table (server TRITON_VERSION on branch rYY.MM).
TABLE = {
    "21.02": "2.7.0", "21.06": "2.11.0", "21.12": "2.17.0", "22.01": "2.18.0", "22.12": "2.29.0",
    "23.01": "2.30.0", "23.05": "2.34.0", "24.01": "2.42.0", "24.10": "2.51.0", "24.11": "2.52.0",
    "24.12": "2.53.0", "25.01": "2.54.0", "25.06": "2.59.0", "25.07": "2.59.1", "25.08": "2.60.0",
    "25.12": "2.64.0", "26.01": "2.65.0", "26.04": "2.68.0", "26.08": "2.72.0",
}


@pytest.mark.parametrize("release,server", sorted(TABLE.items()))
def test_table(release: str, server: str) -> None:
    rel = parse_release(release)
    assert server_version_for(rel) == server
    assert release_for_server(server) == rel
    assert resolve_release(server) == rel and resolve_release("r" + release) == rel


def test_every_release_round_trips_and_versions_are_unique() -> None:
    rel, seen = Release(21, 2), set()
    while rel <= LAST_KNOWN_RELEASE:
        v = server_version_for(rel)
        assert v not in seen
        seen.add(v)
        assert release_for_server(v) == rel
        idx = rel.year * 12 + rel.month
        rel = Release(idx // 12, idx % 12 + 1)
    assert len(seen) == 67  # 21.02 .. 26.08


def test_dev_suffix_and_bad_inputs() -> None:
    assert release_for_server("2.73.0dev") == Release(26, 9)
    for bad in ("24.13", "24", "x.y", "20.12", "3.1.0"):
        with pytest.raises(InputError):
            resolve_release(bad)
    for bad in ("2.51.1", "2.6.0", "2.x.0"):
        with pytest.raises(InputError):
            release_for_server(bad)


@pytest.mark.parametrize("release,py", [("21.02", "3.8"), ("23.04", "3.8"), ("23.05", "3.10"), ("24.10", "3.10"),
                                        ("24.11", "3.12"), ("26.08", "3.12")])
def test_default_python(release: str, py: str) -> None:
    assert default_python_for(parse_release(release)) == py


def test_numpy_bound_changes_at_24_11() -> None:
    assert numpy_requirement(parse_release("24.10")).endswith("<2")
    assert numpy_requirement(parse_release("24.11")) == "numpy>=1.26,<3"


def test_detect_release_order_and_env() -> None:
    assert detect_release(None, None, {"NVIDIA_TRITON_SERVER_VERSION": "24.10"})[0] == Release(24, 10)
    assert detect_release(None, None, {"TRITON_SERVER_VERSION": "2.59.1"})[0] == Release(25, 7)
    rel, why = detect_release("23.05", None, {"NVIDIA_TRITON_SERVER_VERSION": "24.10"})
    assert rel == Release(23, 5) and "given" in why
    with pytest.raises(InputError, match="--triton"):
        detect_release(None, None, {})


class _Meta(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server API
        body = json.dumps({"name": "triton", "version": "2.59.1", "extensions": []}).encode()
        self.send_response(200 if self.path == "/v2" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_detect_release_from_running_server_metadata() -> None:
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Meta)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        rel, why = detect_release(None, f"127.0.0.1:{srv.server_address[1]}", {"NVIDIA_TRITON_SERVER_VERSION": "24.10"})
    finally:
        srv.shutdown()
        srv.server_close()
    assert rel == Release(25, 7) and "2.59.1" in why


def test_unreachable_server_is_an_input_error() -> None:
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Meta)
    port = srv.server_address[1]
    srv.server_close()
    with pytest.raises(InputError, match="cannot read server metadata"):
        detect_release(None, f"http://127.0.0.1:{port}", {})
