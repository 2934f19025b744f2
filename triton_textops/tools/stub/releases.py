"""Release facts: container release <-> server version, default Python, numpy, pybind11, CMake and boost per
python_backend branch (python_backend README, server build.py, release notes; see stub_build/README.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from triton_textops.errors import InputError

PB_REPO = "https://github.com/triton-inference-server/python_backend"
STUB_NAME = "triton_python_backend_stub"
STUB_TARGET = "triton-python-backend-stub"
CMAKE_POLICY_VERSION_MINIMUM = "3.17"



@dataclass(frozen=True, order=True)
class Release:
    """A Triton container release YY.MM (= python_backend branch rYY.MM)."""

    year: int
    month: int

    @property
    def name(self) -> str:
        return f"{self.year:02d}.{self.month:02d}"

    @property
    def branch(self) -> str:
        return f"r{self.name}"

    def _index(self) -> int:
        return self.year * 12 + self.month - 1

    def __str__(self) -> str:
        return self.name


FIRST_RELEASE = Release(21, 2)  # first release of the documented server-version table
LAST_KNOWN_RELEASE = Release(26, 8)  # last rYY.MM in the table; later ones are extrapolated (+1 minor/month)
_R25_06, _R25_07, _R25_08 = Release(25, 6), Release(25, 7), Release(25, 8)
NUMPY2_FIRST_RELEASE = Release(24, 11)  # pybind11 v2.12.0: stubs before r24.11 (pybind11 2.10) break with numpy 2
CMAKE_3_31_FIRST_RELEASE = _R25_08  # cmake_minimum_required(VERSION 3.31.8) from r25.08
BOOST_URL_FIRST_RELEASE = Release(25, 11)  # TRITON_BOOST_URL cache variable exists from r25.11 (boost 1.80.0)
REPO_ORGANIZATION_FIRST_RELEASE = Release(24, 3)  # TRITON_REPO_ORGANIZATION exists from r24.03
# From r23.10 TRITONBACKEND_Initialize (src/python_be.cc) fails unless a stub file exists in the backend's directory
# (backends/python/): "triton_python_backend_stub is not found. Searched paths: ...", even if every model has its own.
BACKEND_DIR_STUB_FIRST_RELEASE = Release(23, 10)

# (first release, default python of tritonserver:<YY.MM>-py3)
_DEFAULT_PYTHON = [
    (Release(0, 1), "3.6"),  # 20.11 and older: Ubuntu 18.04
    (Release(20, 12), "3.8"),  # 20.12 - 23.04: Ubuntu 20.04
    (Release(23, 5), "3.10"),  # 23.05 - 24.10: Ubuntu 22.04
    (Release(24, 11), "3.12"),  # 24.11 - today: Ubuntu 24.04
]


def parse_release(text: str) -> Release:
    """Parse a container release `YY.MM` (or python_backend branch `rYY.MM`)."""
    m = re.fullmatch(r"r?(\d{2})\.(\d{1,2})", text.strip())
    if not m or not 1 <= int(m.group(2)) <= 12:
        raise InputError(f"not a Triton release: {text!r} (expected YY.MM such as 24.10, or a server version 2.X.Y)")
    rel = Release(int(m.group(1)), int(m.group(2)))
    if rel < FIRST_RELEASE:
        raise InputError(f"release {rel} is older than {FIRST_RELEASE}, the first one this tool knows")
    return rel


def server_version_for(release: Release) -> str:
    """Server version (TRITON_VERSION) of a container release: 2.(YY-21)*12+MM+5 to 25.06, 25.07 = 2.59.1, then +1/month."""
    if release < FIRST_RELEASE:
        raise InputError(f"release {release} is older than {FIRST_RELEASE}, the first one this tool knows")
    if release <= _R25_06:
        return f"2.{(release.year - 21) * 12 + release.month + 5}.0"
    if release == _R25_07:
        return "2.59.1"
    return f"2.{60 + release._index() - _R25_08._index()}.0"


def release_for_server(version: str) -> Release:
    """Container release of a server version such as `2.51.0` (a `dev` suffix is ignored)."""
    m = re.fullmatch(r"2\.(\d+)\.(\d+)(?:dev\d*|\.dev\d*|-dev)?", version.strip())
    if not m:
        raise InputError(f"not a Triton server version: {version!r} (expected 2.X.Y such as 2.51.0)")
    minor, patch = int(m.group(1)), int(m.group(2))
    if minor < 7:
        raise InputError(f"server version {version} is older than 2.7.0 ({FIRST_RELEASE}), the first one this tool knows")
    if (minor, patch) == (59, 1):
        return _R25_07
    if patch != 0:
        raise InputError(
            f"unknown server version {version}: releases are 2.X.0 except 2.59.1 (25.07); "
            "pass the container release (YY.MM) instead"
        )
    if minor <= 59:
        idx = FIRST_RELEASE._index() + (minor - 7)
    else:
        idx = _R25_08._index() + (minor - 60)
    return Release(idx // 12, idx % 12 + 1)


def resolve_release(text: str) -> Release:
    """Accept either form: container release `24.10`/`r24.10` or server version `2.51.0`."""
    text = text.strip()
    if re.fullmatch(r"2\.\d+\.\d+.*", text):
        return release_for_server(text)
    return parse_release(text)


def default_python_for(release: Release) -> str:
    """Python major.minor of the stock stub in `nvcr.io/nvidia/tritonserver:<release>-py3`."""
    result = _DEFAULT_PYTHON[0][1]
    for first, py in _DEFAULT_PYTHON:
        if release >= first:
            result = py
    return result


def numpy_requirement(release: Release) -> str:
    """pip requirement for numpy inside an env used by a stub of `release` (numpy 2 needs pybind11 >= 2.12, r24.11+)."""
    return "numpy>=1.21,<2" if release < NUMPY2_FIRST_RELEASE else "numpy>=1.26,<3"


def pybind11_for(release: Release) -> str:
    """pybind11 version python_backend fetches on that branch."""
    if release < Release(23, 1):
        return "v2.6"
    if release < Release(23, 7):
        return "v2.10 (branch)"
    if release < NUMPY2_FIRST_RELEASE:
        return "v2.10.0 (aa304c9)"
    return "v2.12.0 (3e9dfa2)"


def cmake_minimum_for(release: Release) -> tuple[int, ...]:
    """Oldest CMake python_backend's top CMakeLists.txt accepts on that branch."""
    return (3, 31, 8) if release >= CMAKE_3_31_FIRST_RELEASE else (3, 17)


@dataclass(frozen=True)
class BoostPin:
    """The boost tarball a python_backend branch downloads (ExternalProject `boostorg`, URL + URL_HASH)."""

    first: Release  # first branch with this pin
    version: str
    sha256: str

    @property
    def tarball(self) -> str:
        return f"boost_{self.version.replace('.', '_')}.tar.gz"


# From python_backend's CMakeLists.txt on each branch: no boost before r21.06; 1.76.0 r21.06-r23.01;
# 1.79.0 r23.02-r25.10; 1.80.0 from r25.11, the first branch with the TRITON_BOOST_URL cache variable.
BOOST_PINS = [
    BoostPin(Release(21, 6), "1.76.0", "7bd7ddceec1a1dfdcbdb3e609b60d01739c38390a5f956385a12f3122049f0ca"),
    BoostPin(Release(23, 2), "1.79.0", "273f1be93238a068aba4f9735a4a2b003019af067b9c183ed227780b8f36062c"),
    BoostPin(BOOST_URL_FIRST_RELEASE, "1.80.0", "4b2136f98bdd1f5857f1c3dea9ac2018effe65286cf251534b6ae20cc45e1847"),
]


def boost_for(release: Release) -> BoostPin | None:
    """The boost python_backend downloads at build time on that branch (None: the branch uses no boost)."""
    pin = None
    for p in BOOST_PINS:
        if release >= p.first:
            pin = p
    return pin


def release_notes(release: Release) -> list[str]:
    """Caveats for releases outside the documented table."""
    if release > LAST_KNOWN_RELEASE:
        return [
            f"release {release} is newer than the last one in the table ({LAST_KNOWN_RELEASE}); "
            f"server version {server_version_for(release)} is extrapolated (+1 minor per month)"
        ]
    return []


