"""Boost for the build: python_backend downloads it at build time; --boost gives a local one (a tarball, a tree
or a headers directory), wired in through TRITON_BOOST_URL (r25.11+) or an ExternalProject_Add override.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from triton_textops.errors import InputError
from triton_textops.tools.stub.releases import BOOST_PINS, BOOST_URL_FIRST_RELEASE, Release, boost_for

_ARCHIVE_SUFFIX = re.compile(r"\.(tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz|tar|zip|7z)$")


@dataclass(frozen=True)
class BoostSource:
    """A local boost given with `--boost`: a release tarball, or a directory holding `boost/version.hpp`
    (an unpacked boost tree such as boost_1_79_0/, or a headers directory such as /usr/include)."""

    path: Path  # the tarball, or the directory that contains boost/
    kind: str  # "tarball" or "directory"
    version: str | None  # 1.79.0 (from boost/version.hpp, the tarball's name or its SHA256); None if unknown
    sha256: str | None = None  # tarballs only

    def describe(self) -> str:
        what = "tarball" if self.kind == "tarball" else "headers"
        return f"boost {self.version or '(version unknown)'} {what} {self.path}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _boost_header_version(version_hpp: Path) -> str | None:
    m = re.search(r"#\s*define\s+BOOST_VERSION\s+(\d+)", version_hpp.read_text(errors="replace"))
    if not m:
        return None
    v = int(m.group(1))
    return f"{v // 100000}.{v // 100 % 1000}.{v % 100}"


def inspect_boost(spec: str | os.PathLike[str]) -> BoostSource:
    """Classify `--boost SRC`: a boost tarball, or a directory with `boost/version.hpp` (SRC/boost itself is
    accepted too); reads the version from version.hpp, the tarball's name or its SHA256."""
    p = Path(spec).expanduser().absolute()
    if p.is_dir():
        root = p
        if not (root / "boost" / "version.hpp").is_file() and p.name == "boost" and (p / "version.hpp").is_file():
            root = p.parent
        hdr = root / "boost" / "version.hpp"
        if not hdr.is_file():
            raise InputError(f"--boost {spec}: {hdr} does not exist; give a boost tarball, an unpacked boost tree "
                             "(boost_1_79_0/) or a headers directory that holds boost/ (/usr/include with "
                             "libboost-dev)")
        return BoostSource(root, "directory", _boost_header_version(hdr))
    if p.is_file():
        if not _ARCHIVE_SUFFIX.search(p.name):
            raise InputError(f"--boost {spec}: not a directory and not an archive ExternalProject can unpack "
                             "(.tar.gz, .tar.bz2, .tar.xz, .zip, .7z)")
        sha = _sha256(p)
        m = re.search(r"boost_(\d+)_(\d+)_(\d+)", p.name)
        version = ".".join(m.groups()) if m else next((b.version for b in BOOST_PINS if b.sha256 == sha), None)
        return BoostSource(p, "tarball", version, sha)
    raise InputError(f"--boost {spec}: no such file or directory")


BOOST_OVERRIDE_MARKER = "textops-boost-override.txt"

# The wrapper passes every other ExternalProject_Add call through with its arguments intact (empty ones
# included), hence the bracket-quoted re-call through cmake_language (CMake >= 3.18).
_BOOST_OVERRIDE_CMAKE = """\
# Written by `triton-textops stub build` and given to CMake as CMAKE_PROJECT_tritonpythonbackend_INCLUDE, so it
# runs right after python_backend's project() call. python_backend {branch} downloads boost {version} in
# ExternalProject_Add(boostorg URL ... URL_HASH ...) and has no variable to change that URL (TRITON_BOOST_URL
# exists from r25.11). This wraps ExternalProject_Add: `boostorg` takes the boost given with --boost, with the same
# prefix and steps as python_backend's own call (copy <SOURCE_DIR>/boost/ to <build>/boost); every other
# ExternalProject_Add call passes through unchanged. The python_backend checkout itself is not modified.
cmake_minimum_required(VERSION 3.18)
include(ExternalProject)  # has include_guard(GLOBAL): python_backend's own include() keeps this wrapper
function(ExternalProject_Add name)
  if(NOT name STREQUAL "boostorg")
    set(_textops_call "_ExternalProject_Add(")
    math(EXPR _textops_last "${{ARGC}} - 1")
    foreach(_textops_i RANGE 0 ${{_textops_last}})
      string(APPEND _textops_call " [==[${{ARGV${{_textops_i}}}}]==]")
    endforeach()
    cmake_language(EVAL CODE "${{_textops_call}})")
    return()
  endif()
  _ExternalProject_Add(boostorg
    PREFIX "boost-src"
{source}
    CONFIGURE_COMMAND ${{CMAKE_COMMAND}} -E copy_directory <SOURCE_DIR>/boost/ ${{CMAKE_BINARY_DIR}}/boost
    BUILD_COMMAND ""
    INSTALL_COMMAND "")
  message(STATUS "boostorg: local boost {what} (--boost), not {url_file}")
  file(WRITE "${{CMAKE_BINARY_DIR}}/{marker}" [==[{path}]==])
endfunction()
"""


def _cmake_quote(text: str) -> str:
    return "[==[" + text + "]==]"


@dataclass(frozen=True)
class BoostSetup:
    """How the build gets a local boost instead of downloading it: the cache flags, the files the build writes
    into the work dir first (nothing goes into the python_backend checkout), and how to tell it took effect."""

    source: BoostSource
    mechanism: str  # one line for the plan
    flags: Mapping[str, str]
    files: Mapping[Path, str] = field(default_factory=dict)  # written before configure
    links: Mapping[Path, Path] = field(default_factory=dict)  # symlink -> target, made before configure
    marker: Path | None = None  # configure must create it (the override ran)

    def apply(self) -> None:
        """Write the files and links (idempotent)."""
        for path, text in self.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for link, target in self.links.items():
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(target, target_is_directory=True)
        if self.marker is not None and self.marker.exists():
            self.marker.unlink()  # only this configure run may vouch for the override


def boost_setup(release: Release, source: BoostSource, work: Path, build_dir: Path) -> BoostSetup | None:
    """The mechanism for `release`: TRITON_BOOST_URL from r25.11; before that a CMake project include that
    redirects ExternalProject `boostorg`. None for branches that download no boost."""
    pin = boost_for(release)
    if pin is None:
        return None
    if release >= BOOST_URL_FIRST_RELEASE:
        if source.kind == "tarball":
            if source.sha256 != pin.sha256:
                raise InputError(
                    f"--boost {source.path}: SHA256 {source.sha256} is not that of {pin.tarball} "
                    f"({pin.sha256}), which {release.branch} pins with URL_HASH next to TRITON_BOOST_URL; give that "
                    "tarball, or unpack yours and pass the directory (a directory needs no hash)")
            return BoostSetup(source, f"TRITON_BOOST_URL={source.path} (the tarball {release.branch} pins)",
                              {"TRITON_BOOST_URL": str(source.path)})
        # ExternalProject copies a directory URL into its source dir (no hash check): a directory holding
        # only a link to boost/ keeps that copy to the headers (not all of /usr/include or a full boost tree).
        local = work / "boost-local"
        return BoostSetup(source, f"TRITON_BOOST_URL={local} (holds boost -> {source.path / 'boost'})",
                          {"TRITON_BOOST_URL": str(local)}, links={local / "boost": source.path / "boost"})
    override = work / "boost-override.cmake"
    if source.kind == "tarball":
        src = f"    URL {_cmake_quote(str(source.path))}\n    URL_HASH SHA256={source.sha256}"
    else:
        src = f"    SOURCE_DIR {_cmake_quote(str(source.path))}\n    DOWNLOAD_COMMAND \"\""
    text = _BOOST_OVERRIDE_CMAKE.format(branch=release.branch, version=pin.version, source=src,
                                        what=source.kind, url_file=pin.tarball, marker=BOOST_OVERRIDE_MARKER,
                                        path=str(source.path))
    return BoostSetup(
        source,
        f"CMAKE_PROJECT_tritonpythonbackend_INCLUDE={override}: a CMake include written into the work dir that "
        f"redirects ExternalProject boostorg ({pin.tarball}) to the local boost; the python_backend checkout is "
        "not modified",
        {"CMAKE_PROJECT_tritonpythonbackend_INCLUDE": str(override)},
        files={override: text},
        marker=build_dir / BOOST_OVERRIDE_MARKER,
    )


