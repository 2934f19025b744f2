"""ops.core.jitcache: numba's on-disk cache of our kernels keyed by the sources' content, not by the package's path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import triton_textops
from triton_textops.ops.bpe import encode
from triton_textops.ops.core import jitcache
from triton_textops.ops.core import kernels as K  # noqa: F401  (installs the locator)

# one small cached kernel of the package, compiled or loaded from the cache; prints the cache hits and misses
_PROBE = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]
import numpy as np
import triton_textops
assert triton_textops.__file__.startswith(sys.argv[1]), triton_textops.__file__
from triton_textops.ops.bpe.encode import COMPACT
k = COMPACT[0]
z = np.zeros(2, np.int64)
k(0, 1, 0, z, z, np.zeros(2, np.int32), z, z, z, z, z)
print(sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()), k._cache._cache_path)
"""


def _copy_package(dest: Path) -> Path:
    pkg = dest / "triton_textops"
    shutil.copytree(Path(triton_textops.__file__).parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    return pkg


def _probe(site: Path, env: dict[str, str]) -> tuple[int, int, str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(site)], env={**env, "PYTHONPATH": str(site)},
                         capture_output=True, text=True, timeout=600, cwd=site)
    assert out.returncode == 0, out.stderr[-2000:]
    hits, misses, path = out.stdout.split()
    return int(hits), int(misses), path


def test_a_relocated_package_loads_the_cache_and_an_edit_compiles_anew(tmp_path):
    """Triton extracts a tarball env to a new /tmp/python_env_* at each server start: the same files at another
    path load the kernels compiled at the first (numba's own locators key the cache by the path: it compiled
    again). An edit to another file of the ops (a kernel inlines device functions from other modules) compiles
    anew, in another folder, and the first copy still finds its own."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_LOCATOR_CLASSES"}
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1")
    first, second, edited = (tmp_path / n for n in ("python_env_1", "python_env_2", "python_env_3"))
    for site in (first, second, edited):
        _copy_package(site)
    with open(edited / "triton_textops" / "ops" / "text.py", "a") as f:
        f.write("# an edit in a module the probed kernel does not define\n")

    hits, misses, path1 = _probe(first, env)
    assert (hits, misses) == (0, 1)
    assert Path(path1).is_relative_to(tmp_path / "cache" / "triton_textops") and path1.endswith(os.sep + "bpe")
    assert _probe(second, env) == (1, 0, path1)
    hits, misses, path3 = _probe(edited, env)
    assert (hits, misses) == (0, 1) and path3 != path1
    assert _probe(first, env) == (1, 0, path1)

    # numba's own locators, for contrast (what this replaced): the second copy compiled again
    env["NUMBA_CACHE_LOCATOR_CLASSES"] = "UserProvidedCacheLocator"
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-own")
    assert _probe(first, env)[:2] == (0, 1)
    assert _probe(second, env)[:2] == (0, 1)


def _outside(x):  # noqa: ANN001, ANN202
    return x


def test_only_the_package_kernels_take_the_locator(tmp_path, monkeypatch):
    """A function defined outside triton_textops/ops keeps numba's locators; an unwritable folder gives None (then
    numba's own locators too); the folder is <NUMBA_CACHE_DIR>/triton_textops/<stamp>/<the source's folder>."""
    fn = encode.COMPACT[0].py_func
    src = encode.__file__
    monkeypatch.setattr(jitcache, "cache_base", lambda: str(tmp_path / "base"))
    loc = jitcache.PackageLocator.from_function(fn, src)
    assert loc is not None
    assert Path(loc.get_cache_path()) == tmp_path / "base" / "triton_textops" / jitcache.sources_stamp()[:24] / "ops" / "bpe"
    assert loc.get_source_stamp() == jitcache.sources_stamp() and loc.get_disambiguator() == str(
        fn.__code__.co_firstlineno)
    assert jitcache.PackageLocator.from_function(_outside, __file__) is None
    assert jitcache.PackageLocator.from_function(fn, str(Path(triton_textops.__file__).parent / "cli.py")) is None
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setattr(jitcache, "cache_base", lambda: str(tmp_path / "file"))
    assert jitcache.PackageLocator.from_function(fn, src) is None


def test_the_stamp_covers_every_ops_source_and_table(tmp_path, monkeypatch):
    """Any byte of any ops module or Unicode table changes the stamp; a package whose sources cannot be listed or
    read (zipped) has none, and then numba's own locators are used."""
    pkg = _copy_package(tmp_path / "a")
    base = jitcache.stamp_of(pkg)
    assert base == jitcache.sources_stamp() and len(base) == 64
    for rel in ("ops/bpe/merge.py", "ops/__init__.py", "data/unorm_tables.npz"):
        f = pkg / rel
        data = f.read_bytes()
        f.write_bytes(data + b"\n")
        assert jitcache.stamp_of(pkg) != base, rel
        f.write_bytes(data)
    (pkg / "ops" / "new_module.py").write_text("X = 1\n")
    assert jitcache.stamp_of(pkg) != base
    (pkg / "ops" / "new_module.py").unlink()
    assert jitcache.stamp_of(pkg) == base
    (pkg / "data" / "bpe_classes.npz").unlink()
    assert jitcache.stamp_of(pkg) is None
    assert jitcache.stamp_of(tmp_path / "empty") is None
    monkeypatch.setattr(jitcache, "sources_stamp", lambda: None)
    assert jitcache.PackageLocator.from_function(encode.COMPACT[0].py_func, encode.__file__) is None


def test_cpu_and_gpu_caches_take_the_locator_first():
    """numba's CPU cache and numba-cuda's (its own caching module) both try our locator first: the GPU kernels
    compiled at one server start load at the next as the CPU ones do."""
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    assert impl._locator_classes[0] is jitcache.PackageLocator
    assert isinstance(encode.COMPACT[0]._cache._impl.locator, jitcache.PackageLocator)
    cuda_caching = pytest.importorskip("numba.cuda.core.caching")
    from numba.cuda.dispatcher import CUDACacheImpl

    K.gpu(_outside).get()  # the first GPU kernel installs it in numba-cuda's list
    assert cuda_caching.CacheImpl._locator_classes[0] is jitcache.PackageLocator
    assert isinstance(CUDACacheImpl(encode.COMPACT[0].py_func).locator, jitcache.PackageLocator)
