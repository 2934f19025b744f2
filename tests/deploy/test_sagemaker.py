"""deploy sagemaker: archive layout, container environment, the repository intact after extraction; and the
repository checks shared with deploy kserve."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest

from triton_textops.cli import main
from triton_textops.tools.deploy import DeployError, inspect_repository
from triton_textops.tools.deploy.sagemaker import (
    DEFAULT_MODEL_ENV,
    container_environment,
    write_model_archive,
)
from triton_textops.triton.config import load_config

MODELS = ["bert-large", "cuml", "ensemble_all", "postprocess", "preprocess"]


def _tree(root: Path) -> dict[str, tuple[str, int, bytes | str | None]]:
    """Every entry under root: kind, permission bits, and file bytes / link target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", 0, os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode), None)
            else:
                out[rel] = ("file", stat.S_IMODE(st.st_mode), p.read_bytes())
    return out


def _extract(archive: Path, dest: Path) -> None:
    """Extract as SageMaker does (the system tar into /opt/ml/model), else with tarfile."""
    dest.mkdir()
    if shutil.which("tar"):
        subprocess.run(["tar", "-xzf", str(archive), "-C", str(dest)], check=True)
    else:  # pragma: no cover - every CI image has tar
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="tar")


def test_cli_archive_layout_environment_and_intact_repository(make_repo, tmp_path, capsys):
    repo = make_repo("gpu")
    out = tmp_path / "out" / "model.tar.gz"
    rc = main(["deploy", "sagemaker", str(repo), "-o", str(out),
               "--env", "SAGEMAKER_TRITON_SHM_DEFAULT_BYTE_SIZE=33554432"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "ensemble_all" in printed and "GPU instance" in printed

    env = json.loads((out.parent / "sagemaker-env.json").read_text())
    assert env == {DEFAULT_MODEL_ENV: "ensemble_all", "SAGEMAKER_TRITON_SHM_DEFAULT_BYTE_SIZE": "33554432"}

    with tarfile.open(out) as tar:
        names = tar.getnames()
        members = {m.name: m for m in tar.getmembers()}
    # model folders at the archive root (next to the repository's requirements record): no wrapping folder, no ./
    # prefix, no config.pbtxt at the root
    assert sorted({n.split("/")[0] for n in names}) == sorted([*MODELS, "requirements.txt"])
    assert "config.pbtxt" not in names and not any(n.startswith(("./", "/")) for n in names)
    assert all(f"{m}/config.pbtxt" in names and f"{m}/1" in names for m in MODELS)
    assert all(m.uid == 0 and m.gid == 0 for m in members.values())
    assert names == sorted(names, key=lambda n: n.split("/"))  # deterministic order, folders first

    dest = tmp_path / "opt-ml-model"
    _extract(out, dest)
    assert _tree(dest) == _tree(repo)  # same entries, bytes, modes and link targets
    for m in MODELS:
        assert load_config(dest / m) == load_config(repo / m)
    for m in ("preprocess", "postprocess", "bert-large", "cuml"):
        stub = dest / m / "triton_python_backend_stub"
        assert stat.S_IMODE(stub.stat().st_mode) == 0o755
        assert os.readlink(dest / m / "textops-env" / "bin" / "python3") == "/usr/bin/python3"
        assert (dest / m / "textops-env" / "bin" / "activate").is_file()


def test_native_cpu_repository_and_default_model(make_repo, tmp_path):
    repo = make_repo("cpu", backends="native", env=False, stub=False)
    info = inspect_repository(repo)
    assert info.models == MODELS and info.gpus == 0 and info.gpu_models == []
    assert info.python_models == ["postprocess", "preprocess"] and info.envs == {} and info.stubs == {}
    assert container_environment(info) == {DEFAULT_MODEL_ENV: "ensemble_all"}
    assert container_environment(info, "preprocess")[DEFAULT_MODEL_ENV] == "preprocess"
    with pytest.raises(DeployError, match="not in"):
        container_environment(info, "nope")
    with pytest.raises(DeployError, match="--default-model"):
        container_environment(info, None, {DEFAULT_MODEL_ENV: "cuml"})
    archive = write_model_archive(info, tmp_path / "m.tar.gz")
    with tarfile.open(archive) as tar:
        assert "bert-large/1/model.onnx" in tar.getnames() and "cuml/1/checkpoint.tl" in tar.getnames()
    with pytest.raises(DeployError, match="outside the repository"):
        write_model_archive(info, repo / "model.tar.gz")


def test_inspect_gpu_repository(make_repo):
    info = inspect_repository(make_repo("gpu"))
    assert info.gpus == 1 and info.gpu_models == ["bert-large", "cuml", "postprocess", "preprocess"]
    assert set(info.envs) == set(info.stubs) == set(info.python_models) == {
        "bert-large", "cuml", "postprocess", "preprocess"}
    assert info.ensembles == ["ensemble_all"]


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda r: (r / "preprocess" / "features.json").unlink(), "parameter features"),
        (lambda r: shutil.rmtree(r / "cuml" / "textops-env"), "EXECUTION_ENV_PATH"),
        (lambda r: shutil.rmtree(r / "cuml"), "not in the repository: cuml"),
        (lambda r: (r / "preprocess" / "1" / "model.py").unlink(), "version folder is empty"),
        (lambda r: (r / "stray").mkdir(), "without a config.pbtxt"),
        (lambda r: (r / "cuml" / "config.pbtxt").write_text("name: 'cuml'\nbogus_field: 1\n"), "bogus_field"),
        (lambda r: (r / "cuml" / "config.pbtxt").write_text(
            (r / "cuml" / "config.pbtxt").read_text().replace('name: "cuml"', 'name: "forest"')), "differs"),
    ],
)
def test_incomplete_repositories_are_refused(make_repo, tmp_path, capsys, damage, match):
    repo = make_repo("cpu")
    damage(repo)
    with pytest.raises(DeployError, match=match):
        inspect_repository(repo)
    assert main(["deploy", "sagemaker", str(repo), "-o", str(tmp_path / "x.tar.gz")]) == 2
    assert match.split()[0] in capsys.readouterr().err
    assert not (tmp_path / "x.tar.gz").exists()


def test_model_folder_instead_of_repository(make_repo):
    repo = make_repo("cpu")
    with pytest.raises(DeployError, match="one model's folder"):
        inspect_repository(repo / "preprocess")
    with pytest.raises(DeployError, match="not a directory"):
        inspect_repository(repo / "missing")


def test_python_models_without_a_textops_env_are_refused(make_repo, tmp_path, capsys):
    repo = make_repo("cpu", backends="native", env=False, stub=False)
    out = tmp_path / "m.tar.gz"
    assert main(["deploy", "sagemaker", str(repo), "-o", str(out)]) == 2
    assert "postprocess, preprocess import triton_textops but name no EXECUTION_ENV_PATH" in capsys.readouterr().err
    assert not out.exists()
    assert main(["deploy", "sagemaker", str(repo), "-o", str(out), "--image-has-textops"]) == 0 and out.is_file()


def test_archive_writing_reports_progress(make_repo, tmp_path):
    """Issue 47: a 394 MB archive took 67 s with no output; a line comes every few seconds (here: every file)."""
    from triton_textops.tools.deploy import inspect_repository
    from triton_textops.tools.deploy.sagemaker import write_model_archive

    lines: list[str] = []
    info = inspect_repository(make_repo("cpu"))
    write_model_archive(info, tmp_path / "out" / "model.tar.gz", progress=lines.append, every_s=0.0)
    assert lines and all(line.startswith("archived ") and " MiB (" in line for line in lines), lines
    assert lines[-1].split()[1] == lines[-1].split()[3]  # the last: everything archived


def test_models_whose_needs_are_missing_are_refused_by_name(make_repo, tmp_path, capsys):
    """Issue 47: bert-large and cuml (Python stand-ins) import onnxruntime and treelite; deploy refuses an env or
    an image without them, naming each model and package, instead of a pod that fails to load them."""
    repo = make_repo("cpu")
    for model, dist in (("bert-large", "onnxruntime-1.18.0"), ("cuml", "treelite-4.4.1")):  # each has its env
        shutil.rmtree(next((repo / model).glob(f"**/site-packages/{dist}.dist-info")))
    assert main(["deploy", "sagemaker", str(repo), "-o", str(tmp_path / "m.tar.gz")]) == 2
    err = capsys.readouterr().err
    assert "python model 'bert-large' (triton_textops.models.onnx_regressor) imports onnxruntime>=1.18, which its " \
        "env" in err and "does not have" in err
    assert "python model 'cuml' (triton_textops.models.forest) imports treelite>=4.1,<5" in err
    assert not (tmp_path / "m.tar.gz").exists()

    bare = make_repo("cpu", env=False, name="bare")  # no env: the image must have them
    out = str(tmp_path / "b.tar.gz")
    assert main(["deploy", "sagemaker", str(bare), "-o", out, "--image-has-textops"]) == 2
    err = capsys.readouterr().err
    assert "'bert-large'" in err and "which the serving image (say what it has with --image-has PACKAGE)" in err
    assert main(["deploy", "sagemaker", str(bare), "-o", out, "--image-has-textops", "--image-has", "onnxruntime",
                 "--image-has", "treelite"]) == 0
