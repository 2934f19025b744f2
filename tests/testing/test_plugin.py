"""The pytest plugin used from a user's test suite: fixtures pb_utils and triton_model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

MODELS = Path(__file__).parent / "models"


def test_plugin_fixtures_in_a_user_project(tmp_path):
    shutil.copytree(MODELS / "add_sub", tmp_path / "models" / "add_sub")
    (tmp_path / "test_user.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path

            import numpy as np

            HERE = Path(__file__).parent


            def test_pb_utils_fixture(pb_utils):
                import triton_python_backend_utils

                assert triton_python_backend_utils is pb_utils
                t = pb_utils.Tensor("X", np.array([b"a"], dtype=object))
                assert t.as_numpy().tolist() == [b"a"]


            def test_triton_model_fixture(triton_model):
                model = triton_model(HERE / "models" / "add_sub")
                out = model.infer({"INPUT0": np.ones(4, np.float32), "INPUT1": np.ones(4, np.float32)})
                assert out["OUTPUT0"].tolist() == [2.0] * 4
                model.make_request({"INPUT0": np.ones(4, np.float32), "INPUT1": np.ones(4, np.float32)})


            def test_finalized_after_previous_test(pb_utils):
                assert not pb_utils.is_model_ready("add_sub")
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout
