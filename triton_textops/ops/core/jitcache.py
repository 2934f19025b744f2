"""Where numba keeps our compiled kernels on disk: keyed by the content of the package's kernel sources, not by
where the package lies.

numba's own locators put a function's cache next to its source file (``__pycache__``), or under ``NUMBA_CACHE_DIR``
/ the user cache directory in a folder named by a hash of the source's absolute directory, and check only that one
file's content. Two consequences for a served model:

- Triton extracts an ``EXECUTION_ENV_PATH`` tarball into a new ``/tmp/python_env_XXXXXX/`` at every server start
  and deletes it at shutdown. The package's path changes each time, so every start compiled every kernel again
  and left one more unused copy of the cache under ``NUMBA_CACHE_DIR``: a served model's second start took a cold
  compile's time, not a cache load's (``benchmarks/bpe.py --load --python ENV/bin/python --relocate`` measures it;
  figures: benchmarks/RESULTS.md, Design measurements, ops/core/jitcache.py).
- A kernel inlines device functions from other files. After a change to only those files (an edit, or an upgrade
  in place that leaves the old cache files behind), numba loaded the kernel compiled from the old ones.

:class:`PackageLocator`, put first in numba's locator list (CPU, and numba-cuda's on the first GPU kernel), takes
every function defined under ``triton_textops/ops``: its cache lives in ``<base>/triton_textops/<stamp>/<the
source's folder in the package>``, where ``<base>`` is ``NUMBA_CACHE_DIR`` when set, else numba's user-wide cache
directory (``~/.cache/numba``, ``XDG_CACHE_HOME`` honoured), and ``<stamp>`` a hash of every source and table file
of the ops. Any change to any of them compiles everything anew (in a new folder); the same files at any path load
the same cache. numba's entries stay keyed by signature, CPU and numba version as before. Where ``<base>`` cannot
be written, numba's own locators are used. A user's ``NUMBA_CACHE_LOCATOR_CLASSES`` is left alone.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[2]  # triton_textops/
OPS = PACKAGE / "ops"
TABLES = ("unicode_tables.npz", "bpe_classes.npz", "unorm_tables.npz")  # data the kernels' tables are built from


@functools.cache
def sources_stamp() -> str | None:
    """A hash of every ``.py`` file under ``triton_textops/ops`` (by relative path and content) and of the Unicode
    table files: what our compiled kernels can depend on. None when they cannot all be read as files (a zipped
    package: numba's own locators then)."""
    return stamp_of(PACKAGE)


def stamp_of(package: Path) -> str | None:
    """:func:`sources_stamp` of the package folder ``package``."""
    h = hashlib.sha256()
    try:
        files = sorted(p for p in (package / "ops").rglob("*.py") if "__pycache__" not in p.parts)
        if not files:
            return None
        for p in files + [package / "data" / name for name in TABLES]:
            rel = p.relative_to(package).as_posix().encode()
            data = p.read_bytes()
            h.update(len(rel).to_bytes(8, "little") + rel + len(data).to_bytes(8, "little") + data)
    except OSError:
        return None
    return h.hexdigest()


def cache_base() -> str:
    """``NUMBA_CACHE_DIR`` when set, else numba's user-wide cache directory."""
    from numba.core import config  # noqa: PLC0415

    if config.CACHE_DIR:
        return str(config.CACHE_DIR)
    from numba.misc.appdirs import AppDirs  # noqa: PLC0415

    return AppDirs(appname="numba", appauthor=False).user_cache_dir


class PackageLocator:
    """A numba cache locator (the duck type both numba's and numba-cuda's caches take) for the functions defined
    under ``triton_textops/ops``: see the module's docstring."""

    def __init__(self, py_func: Any, py_file: str, stamp: str) -> None:
        self._lineno = py_func.__code__.co_firstlineno
        self._stamp = stamp
        rel = Path(py_file).resolve().parent.relative_to(PACKAGE)
        self._cache_path = os.path.join(cache_base(), "triton_textops", stamp[:24], *rel.parts)

    def ensure_cache_path(self) -> None:
        path = self.get_cache_path()
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()  # (writable: as numba's locators check)

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        return self._stamp

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> PackageLocator | None:
        """The locator of ``py_func`` when its source is one of ours, their stamp known and the cache folder can
        be written, else None (numba's next locator)."""
        try:
            Path(py_file).resolve().relative_to(OPS)
        except (ValueError, OSError):
            return None
        stamp = sources_stamp()
        if stamp is None:
            return None
        try:
            self = cls(py_func, py_file, stamp)
            self.ensure_cache_path()
        except OSError:
            return None
        return self


def install(caching: Any) -> bool:
    """Put :class:`PackageLocator` first in the locator list of numba's (or numba-cuda's) ``caching`` module, once;
    False where that module has no such list (another numba: its own locators then)."""
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if not isinstance(classes, list):
        return False
    if PackageLocator not in classes:
        classes.insert(0, PackageLocator)
    return True
