"""The tools' one subprocess runner and one interpreter description (issue 48)."""

from __future__ import annotations

import sys

import pytest

from triton_textops.errors import InputError
from triton_textops.tools.interpreter import PythonInfo, query_python
from triton_textops.tools.proc import CommandError, run


class _Mine(RuntimeError):
    pass


def test_run_returns_the_output_and_logs_the_command() -> None:
    seen: list[str] = []
    res = run([sys.executable, "-c", "print('out'); import sys; print('err', file=sys.stderr)"], log=seen.append)
    assert res.stdout == "out\n" and res.stderr == "err\n"
    assert seen == [f"$ {sys.executable} -c 'print('\"'\"'out'\"'\"'); import sys; print('\"'\"'err'\"'\"', "
                    f"file=sys.stderr)'"]


def test_a_failure_raises_the_callers_error_with_the_tail_of_the_output() -> None:
    code = "import sys; [print(i) for i in range(100)]; sys.exit('boom')"
    with pytest.raises(_Mine) as exc:
        run([sys.executable, "-c", code], "counting", error=_Mine, merge_output=True, tail_lines=3)
    text = str(exc.value)
    assert text.startswith("counting failed (exit 1): ")
    assert text.splitlines()[1:] == ["98", "99", "boom"]
    with pytest.raises(CommandError, match=r"^command failed \(exit 3\)"):
        run([sys.executable, "-c", "raise SystemExit(3)"])


def test_a_command_that_cannot_start_or_times_out_raises_it_too(tmp_path) -> None:
    with pytest.raises(_Mine, match="nothing failed: .*No such file"):
        run([tmp_path / "nothing"], "nothing", error=_Mine)
    with pytest.raises(_Mine, match=r"^sleeping did not finish in 0.5 s: "):
        run([sys.executable, "-c", "import time; time.sleep(30)"], "sleeping", error=_Mine, timeout=0.5)


def test_one_python_info_for_every_tool() -> None:
    info = query_python(sys.executable)
    assert isinstance(info, PythonInfo)
    v = sys.version_info
    assert info.version == f"{v[0]}.{v[1]}.{v[2]}" and info.major_minor == f"{v[0]}.{v[1]}"
    if info.shared:
        lib = info.find_libpython()
        assert lib is not None and lib.name.startswith(f"libpython{info.major_minor}.so")
    with pytest.raises(InputError, match="querying Python interpreter"):
        query_python("/nonexistent/python3")
    with pytest.raises(_Mine):
        query_python("/nonexistent/python3", error=_Mine)
