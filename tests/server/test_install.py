"""Installing the server from the wheel into the cache: only the server parts, atomic, stub placement.

Uses a small fake wheel with the real layout, so it runs offline and fast (no server is started).
"""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from triton_textops.tools.server import TRITON_VERSION, TritonServerError, install_server

FILES = {
    "pytriton/__init__.py": (b"", 0o644),
    "pytriton/tritonserver/bin/tritonserver": (b"#!/bin/sh\n", 0o755),
    "pytriton/tritonserver/backends/python/libtriton_python.so": (b"so", 0o666),
    "pytriton/tritonserver/backends/python/triton_python_backend_utils.py": (b"# utils\n", 0o666),
    "pytriton/tritonserver/python_backend_stubs/3.10/triton_python_backend_stub": (b"stub310", 0o755),
    "pytriton/tritonserver/python_backend_stubs/3.11/triton_python_backend_stub": (b"stub311", 0o644),
    "nvidia_pytriton.libs/libtritonserver-x.so": (b"lib", 0o666),
    "nvidia_pytriton-0.7.0.dist-info/METADATA": (b"Name: nvidia-pytriton\n", 0o644),
}


def fake_wheel(path: Path, skip: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, (data, mode) in FILES.items():
            if name == skip:
                continue
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | mode) << 16
            zf.writestr(info, data)
    return path


def test_install_unpacks_only_the_server_and_replaces_a_half_finished_one(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    final = cache / f"tritonserver-{TRITON_VERSION}"
    (final / "pytriton").mkdir(parents=True)  # left over by an interrupted run: no completion marker
    (final / "junk").write_text("x")
    inst = install_server(cache, wheel=fake_wheel(tmp_path / "w.whl"))
    assert inst.executable == final / "pytriton/tritonserver/bin/tritonserver"
    assert inst.executable.stat().st_mode & 0o777 == 0o755
    assert not (final / "junk").exists()
    assert not (final / "pytriton/__init__.py").exists()  # pytriton's Python package is not installed
    assert not (final / "nvidia_pytriton-0.7.0.dist-info").exists()
    assert (final / "nvidia_pytriton.libs/libtritonserver-x.so").is_file()
    assert [p.name for p in cache.iterdir() if p.name.startswith(".") and "tmp" in p.name] == []
    # the Python-3.11 backend dir: utils + backend library + the 3.11 stub at mode 0755
    bdir = inst.backend_directory("3.11")
    assert bdir == final / "pytriton/tritonserver/backends-py3.11"
    stub = bdir / "python" / "triton_python_backend_stub"
    assert stub.read_bytes() == b"stub311" and stub.stat().st_mode & 0o777 == 0o755
    assert (bdir / "python" / "libtriton_python.so").is_file()
    assert not (inst.backends / "python" / "triton_python_backend_stub").exists()  # pristine copy untouched
    assert inst.backend_directory("3.11") == bdir  # cached
    with pytest.raises(TritonServerError, match=r"no Python-backend stub for Python 3.9 \(has \['3.10', '3.11'\]\)"):
        inst.backend_directory("3.9")
    # second call: already complete, the wheel is not needed
    assert install_server(cache, wheel=tmp_path / "does-not-exist.whl").executable == inst.executable


def test_failed_install_leaves_nothing_that_looks_complete(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    broken = fake_wheel(tmp_path / "broken.whl", skip="pytriton/tritonserver/bin/tritonserver")
    with pytest.raises(TritonServerError, match="has no pytriton/tritonserver/bin/tritonserver"):
        install_server(cache, wheel=broken)
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []


# ----------------------------------------------------------------- triton-textops from its wheel, extra by extra

# a pip user's venv sees only the distributions an extra brings: the others' modules are hidden by an import hook
# run from a .pth file (the venv reads the test venv's packages through another .pth: offline, no index)
_HIDE_HOOK = """import os, sys
_HIDE = set(filter(None, os.environ.get("TEXTOPS_TEST_HIDE", "").split(",")))
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _HIDE:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Hide())
"""


def _closure(requirements: list[str], extras: set[str]) -> set[str]:
    """The distributions (normalized names) ``requirements`` pull in, through the installed metadata."""
    import importlib.metadata as md

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [(r, extras) for r in requirements]
    while todo:
        text, active = todo.pop()
        req = Requirement(text)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (active or {""})):
            continue
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            todo += [(r, set(req.extras)) for r in md.requires(req.name) or []]
        except md.PackageNotFoundError:
            pass
    return seen


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(venv, wheel): triton-textops installed from its wheel (--no-deps --no-index) into a fresh venv."""
    import subprocess
    import sys

    from wheels import build_textops_wheel

    tmp = tmp_path_factory.mktemp("wheel_user")
    wheel = build_textops_wheel(tmp)
    venv = tmp / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", purelib], capture_output=True, text=True,
                               check=True).stdout.strip())
    ours = subprocess.run([sys.executable, "-c", purelib], capture_output=True, text=True, check=True).stdout
    (site / "_test_venv_packages.pth").write_text(ours)
    (site / "_textops_hide.py").write_text(_HIDE_HOOK)
    (site / "_textops_hide.pth").write_text("import _textops_hide\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True)
    return venv, wheel


def _wheel_requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return [line.split(":", 1)[1].strip() for line in zf.read(meta).decode().splitlines()
                if line.startswith("Requires-Dist:")]


# what each extra is for, run from the wheel's venv with only that extra's distributions importable
EXTRA_COMMANDS = {
    "server": [["repo", "create", "{tmp}/r", "--device", "cpu", "--features", "{features}"],
               ["@python", "import tritonclient.http; from triton_textops.tools.server import TritonServer"]],
    "pack": [["env", "pack", "--tool", "venv", "--triton", "24.10", "--dry-run", "-o", "{tmp}/e.tar.gz"],
             ["repo", "create", "{tmp}/r", "--device", "cpu", "--features", "{features}"]],
    "deploy": [["deploy", "kserve", "{repo}", "--storage-uri", "s3://bucket/repo", "-o", "{tmp}/isvc.yaml"],
               ["deploy", "sagemaker", "{repo}", "-o", "{tmp}/model.tar.gz"]],
    "testing": [["@python", "from triton_textops.testing import load_model; import numpy as np; "
                 "m = load_model('{repo}/postprocess'); o = m.infer({{'BERT_WEIGHT_INPUT': np.full((1, 1), .5, "
                 "np.float32), 'BERT_LARGE_SCORE': np.ones((1, 1), np.float32), 'CUML_SCORE': np.zeros((1, 1), "
                 "np.float32)}}); assert abs(float(o['OUTPUT0'][0, 0]) - .5) < 1e-6, o"]],
}


# ... and a command of another extra fails in one line naming that one (the hiding is real)
OTHER_EXTRA = {
    "server": (["deploy", "kserve", "{repo}", "--storage-uri", "s3://bucket/repo"], "deploy"),
    "pack": (["deploy", "kserve", "{repo}", "--storage-uri", "s3://bucket/repo"], "deploy"),
    "deploy": (["env", "pack", "--tool", "venv", "--triton", "24.10", "--dry-run", "-o", "{tmp}/e.tar.gz"], "pack"),
    "testing": (["serve", "{repo}"], "server"),
}


@pytest.mark.slow
@pytest.mark.parametrize("extra", sorted(EXTRA_COMMANDS))
def test_each_extra_from_the_wheel_runs_its_commands(extra: str, wheel_venv: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    """Issue 47: `pip install '<wheel>[extra]'` carries what the extra's commands import. The venv has the wheel;
    every module of a distribution the base install + this extra do not pull in (by the wheel's own metadata) is
    hidden, so a command needing one fails as it would for a pip user."""
    import importlib.metadata as md
    import os
    import subprocess
    import sys

    from packaging.utils import canonicalize_name

    from triton_textops import ReadabilityFeatures
    from triton_textops.bundled import austen_paragraphs, vocab_path
    from triton_textops.tools.repo.generate import create_repository

    venv, wheel = wheel_venv
    keep = _closure(_wheel_requirements(wheel), {extra}) | {"pip", "setuptools", "wheel", "packaging"}
    hide = set()
    for module, dists in md.packages_distributions().items():
        if module.startswith("_") or module in sys.stdlib_module_names:
            continue
        if not any(canonicalize_name(d) in keep for d in dists):
            hide.add(module)
    hide.discard("triton_textops")
    features = tmp_path / "features.json"
    ReadabilityFeatures.fit(austen_paragraphs()[::16], n_common=20, n_rare=20).save(features)
    src = tmp_path / "src"
    src.mkdir()
    (src / "model.onnx").write_bytes(b"onnx")
    (src / "forest.tl").write_bytes(b"forest")
    repo = create_repository(tmp_path / "repo", device="cpu", vocab=vocab_path(), features=features,
                             bert_model=src / "model.onnx", forest=src / "forest.tl", backends="python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(TEXTOPS_TEST_HIDE=",".join(sorted(hide)), PATH=f"{venv / 'bin'}:/usr/bin:/bin")
    for command in EXTRA_COMMANDS[extra]:
        args = [a.format(tmp=tmp_path, features=features, repo=repo) for a in command]
        argv = [str(venv / "bin" / "python"), "-c", args[1]] if args[0] == "@python" else \
            [str(venv / "bin" / "triton-textops"), *args]
        if extra == "deploy":  # (the image is said to have what the stand-ins import: no env is packed)
            argv += ["--image-has-textops", "--image-has", "onnxruntime", "--image-has", "treelite"]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
        assert res.returncode == 0, (extra, args, res.stdout[-2000:], res.stderr[-3000:])
        assert "Traceback" not in res.stderr, res.stderr
    command, other = OTHER_EXTRA[extra]
    args = [a.format(tmp=tmp_path, repo=repo) for a in command]
    res = subprocess.run([str(venv / "bin" / "triton-textops"), *args], capture_output=True, text=True, timeout=600,
                         env=env, cwd=tmp_path)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, (extra, args, res.stderr[-3000:])
    assert f"pip install 'triton-textops[{other}]'" in res.stderr, res.stderr
