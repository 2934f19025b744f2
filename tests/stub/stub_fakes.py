"""Fake boost sources for the stub-build tests: a headers directory and a release-shaped tarball whose version
(1.23.4) no real boost has, so a stub that reports it got the boost given with --boost."""

from __future__ import annotations

import tarfile
from pathlib import Path

FAKE_BOOST_VERSION = (1, 23, 4)  # no real boost has it: a build that prints it used the --boost given


def write_boost_headers(root: Path, version: tuple[int, int, int] = FAKE_BOOST_VERSION) -> Path:
    """`root/boost/version.hpp` as boost writes it (BOOST_VERSION, BOOST_LIB_VERSION); returns root."""
    major, minor, patch = version
    (root / "boost").mkdir(parents=True, exist_ok=True)
    (root / "boost" / "version.hpp").write_text(
        f"#define BOOST_VERSION {major * 100000 + minor * 100 + patch}\n"
        f'#define BOOST_LIB_VERSION "{major}_{minor}' + (f'_{patch}' if patch else "") + '"\n')
    return root


def write_boost_tarball(path: Path, version: tuple[int, int, int] = FAKE_BOOST_VERSION) -> Path:
    """A release-shaped boost tarball: boost_X_Y_Z/boost/version.hpp inside; returns path."""
    name = "boost_{}_{}_{}".format(*version)
    tree = write_boost_headers(path.parent / f".{name}-tree" / name, version)
    with tarfile.open(path, "w:gz") as tar:
        tar.add(tree, arcname=name)
    return path

