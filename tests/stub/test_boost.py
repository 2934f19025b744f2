"""`--boost SRC` for every release (TRITON_BOOST_URL from r25.11, a CMake project include before), boost in the
requirement checks and the releases table, and `--offline` refusing to start while any download remains."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from stub_fakes import FAKE_BOOST_VERSION, write_boost_headers

from triton_textops.errors import InputError
from triton_textops.tools.stub import (
    BOOST_OVERRIDE_MARKER,
    FETCH_DEPS,
    BoostSource,
    PythonInfo,
    boost_for,
    check_boost,
    inspect_boost,
    main,
    make_plan,
    parse_release,
)

FAKE = ".".join(map(str, FAKE_BOOST_VERSION))
SHA_1_79 = "273f1be93238a068aba4f9735a4a2b003019af067b9c183ed227780b8f36062c"
SHA_1_80 = "4b2136f98bdd1f5857f1c3dea9ac2018effe65286cf251534b6ae20cc45e1847"


def _flags(cmd: list[str]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in cmd if a.startswith("-D"))


def _all_sources(tmp_path: Path) -> dict[str, Path]:
    return {name: tmp_path / "src" / name.lower() for name in FETCH_DEPS}


@pytest.mark.parametrize(("release", "version"), [
    ("21.05", None), ("21.06", "1.76.0"), ("23.01", "1.76.0"), ("23.02", "1.79.0"), ("24.10", "1.79.0"),
    ("25.10", "1.79.0"), ("25.11", "1.80.0"), ("25.12", "1.80.0"), ("26.08", "1.80.0"),
])
def test_boost_each_release_downloads(release: str, version: str | None) -> None:
    pin = boost_for(parse_release(release))
    assert (pin.version if pin else None) == version
    if pin is not None:
        assert pin.tarball == f"boost_{version.replace('.', '_')}.tar.gz"
    assert boost_for(parse_release("24.10")).sha256 == SHA_1_79  # type: ignore[union-attr]
    assert boost_for(parse_release("25.11")).sha256 == SHA_1_80  # type: ignore[union-attr]


def test_inspect_boost_kinds(boost_headers: Path, boost_tarball: Path, tmp_path: Path) -> None:
    d = inspect_boost(boost_headers)
    assert (d.kind, d.path, d.version, d.sha256) == ("directory", boost_headers, FAKE, None)
    assert inspect_boost(boost_headers / "boost").path == boost_headers  # SRC/boost itself is accepted
    t = inspect_boost(boost_tarball)
    assert (t.kind, t.version) == ("tarball", FAKE)
    assert t.sha256 == hashlib.sha256(boost_tarball.read_bytes()).hexdigest()
    with pytest.raises(InputError, match="no such file"):
        inspect_boost(tmp_path / "nope")
    with pytest.raises(InputError, match="libboost-dev"):
        inspect_boost(tmp_path)  # a directory without boost/version.hpp
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InputError, match="not a directory and not an archive"):
        inspect_boost(tmp_path / "notes.txt")


def test_plan_24_10_with_boost_headers_uses_a_project_include(
    this_python: PythonInfo, boost_headers: Path, tmp_path: Path
) -> None:
    pb = tmp_path / "src" / "pb"
    pb.mkdir(parents=True)
    (pb / "CMakeLists.txt").write_text("project(tritonpythonbackend)\n")
    plan = make_plan(parse_release("24.10"), this_python, gpu=False, work_dir=tmp_path / "w",
                     python_backend_src=pb, dep_sources=_all_sources(tmp_path), offline=True, boost=boost_headers)
    f = _flags(plan.configure)
    override = tmp_path / "w" / "boost-override.cmake"
    assert f["CMAKE_PROJECT_tritonpythonbackend_INCLUDE"] == str(override)
    assert "TRITON_BOOST_URL" not in f and f["FETCHCONTENT_FULLY_DISCONNECTED"] == "ON"
    assert plan.cmake_minimum == (3, 18)  # the override uses cmake_language()
    text = plan.render()
    assert f"boost:            boost {FAKE} headers {boost_headers} via CMAKE_PROJECT_tritonpythonbackend_INCLUDE" in text
    assert "python_backend checkout is not modified" in text and f"# write {override}" in text
    assert any(f"boost {FAKE} given; r24.10 pins 1.79.0" in n for n in plan.notes)
    assert not override.exists()  # planning writes nothing
    assert plan.boost is not None and plan.boost.marker == tmp_path / "w" / "build" / BOOST_OVERRIDE_MARKER
    plan.boost.apply()
    cmake = override.read_text()
    assert f"SOURCE_DIR [==[{boost_headers}]==]" in cmake and 'DOWNLOAD_COMMAND ""' in cmake
    assert "function(ExternalProject_Add name)" in cmake and 'PREFIX "boost-src"' in cmake
    assert "<SOURCE_DIR>/boost/ ${CMAKE_BINARY_DIR}/boost" in cmake and "URL_HASH SHA256" not in cmake
    assert sorted(p.name for p in pb.iterdir()) == ["CMakeLists.txt"]  # the checkout is untouched


def test_plan_24_10_with_boost_tarball_pins_its_hash(this_python: PythonInfo, boost_tarball: Path,
                                                    tmp_path: Path) -> None:
    plan = make_plan(parse_release("24.10"), this_python, gpu=False, work_dir=tmp_path / "w", boost=boost_tarball)
    assert plan.boost is not None
    plan.boost.apply()
    cmake = (tmp_path / "w" / "boost-override.cmake").read_text()
    sha = hashlib.sha256(boost_tarball.read_bytes()).hexdigest()
    assert f"URL [==[{boost_tarball}]==]" in cmake and f"URL_HASH SHA256={sha}" in cmake
    assert plan.clone is not None  # online build of the branch, boost still local


def test_plan_25_11_with_boost_directory_uses_triton_boost_url(this_python: PythonInfo, boost_headers: Path,
                                                              tmp_path: Path) -> None:
    plan = make_plan(parse_release("25.11"), this_python, gpu=False, work_dir=tmp_path / "w",
                     python_backend_src=tmp_path / "pb", dep_sources=_all_sources(tmp_path), offline=True,
                     boost=boost_headers)
    f = _flags(plan.configure)
    local = tmp_path / "w" / "boost-local"
    assert f["TRITON_BOOST_URL"] == str(local)
    assert "CMAKE_PROJECT_tritonpythonbackend_INCLUDE" not in f
    assert plan.cmake_minimum == (3, 31, 8)
    assert "via TRITON_BOOST_URL=" in plan.render() and f"ln -sfn {boost_headers / 'boost'} {local / 'boost'}" in plan.render()
    assert plan.boost is not None and plan.boost.marker is None
    plan.boost.apply()
    plan.boost.apply()  # idempotent
    assert (local / "boost").is_symlink() and (local / "boost" / "version.hpp").is_file()
    assert sorted(p.name for p in local.iterdir()) == ["boost"]  # ExternalProject copies only the headers


def test_plan_25_11_tarball_must_be_the_pinned_one(this_python: PythonInfo, boost_tarball: Path,
                                                   tmp_path: Path) -> None:
    with pytest.raises(InputError, match=f"not that of boost_1_80_0.tar.gz \\({SHA_1_80}\\).*unpack"):
        make_plan(parse_release("25.11"), this_python, work_dir=tmp_path, boost=boost_tarball)
    pinned = BoostSource(tmp_path / "boost_1_80_0.tar.gz", "tarball", "1.80.0", SHA_1_80)
    plan = make_plan(parse_release("25.12"), this_python, work_dir=tmp_path, boost=pinned)
    assert _flags(plan.configure)["TRITON_BOOST_URL"] == str(tmp_path / "boost_1_80_0.tar.gz")
    assert not any("given;" in n for n in plan.notes)  # the pinned version: no mismatch note


def test_25_10_is_the_last_release_without_triton_boost_url(this_python: PythonInfo, boost_headers: Path,
                                                            tmp_path: Path) -> None:
    f = _flags(make_plan(parse_release("25.10"), this_python, work_dir=tmp_path, boost=boost_headers).configure)
    assert "CMAKE_PROJECT_tritonpythonbackend_INCLUDE" in f and "TRITON_BOOST_URL" not in f


def test_boost_before_21_06_is_ignored_and_not_required_offline(this_python: PythonInfo, boost_headers: Path,
                                                                tmp_path: Path) -> None:
    plan = make_plan(parse_release("21.05"), this_python, work_dir=tmp_path, boost=boost_headers)
    assert plan.boost is None and any("--boost ignored" in n for n in plan.notes)
    plan = make_plan(parse_release("21.05"), this_python, work_dir=tmp_path, python_backend_src=tmp_path,
                     dep_sources=_all_sources(tmp_path), offline=True)
    assert plan.boost_line() == "not used by r21.05"


def test_offline_refuses_and_names_everything_missing(this_python: PythonInfo, boost_headers: Path,
                                                      tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        make_plan(parse_release("24.10"), this_python, offline=True, work_dir=tmp_path)
    msg = str(exc.value)
    for opt in ["--python-backend-src", "--boost (boost headers: boost_1_79_0.tar.gz"] + [
            f"--{d.replace('_', '-')}" for d in FETCH_DEPS.values()]:
        assert opt in msg, opt
    with pytest.raises(InputError) as exc:  # every source but boost
        make_plan(parse_release("24.10"), this_python, offline=True, work_dir=tmp_path,
                  python_backend_src=tmp_path, dep_sources=_all_sources(tmp_path))
    assert str(exc.value).endswith("/usr/include from libboost-dev)") and "-src" not in str(exc.value).split("missing:")[1]
    deps = _all_sources(tmp_path)
    del deps["GOOGLETEST"]
    with pytest.raises(InputError, match=r"missing: --googletest-src \(GOOGLETEST\)$"):
        make_plan(parse_release("24.10"), this_python, offline=True, work_dir=tmp_path,
                  python_backend_src=tmp_path, dep_sources=deps, boost=boost_headers)


def test_cli_offline_refusal_starts_nothing(this_python: PythonInfo, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    args = ["stub", "build", "--triton", "24.10", "--python", this_python.executable, "--no-gpu", "--offline",
            "--work-dir", str(tmp_path / "w"), "--output", str(tmp_path / "o/"), "--python-backend-src", str(tmp_path)]
    for dest in FETCH_DEPS.values():
        args += [f"--{dest.replace('_', '-')}", str(tmp_path / dest)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--offline needs every source the build would download; missing: --boost" in err
    assert not (tmp_path / "w").exists() and not (tmp_path / "o").exists()


def test_cli_dry_run_with_boost(this_python: PythonInfo, boost_headers: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["stub", "build", "--triton", "25.11", "--python", this_python.executable, "--no-gpu",
               "--work-dir", str(tmp_path / "w"), "--boost", str(boost_headers), "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0
    assert f"-DTRITON_BOOST_URL={tmp_path / 'w' / 'boost-local'}" in out
    assert f"[ok] boost: boost {FAKE} headers {boost_headers} (r25.11 pins 1.80.0)" in out
    assert not (tmp_path / "w").exists()


def test_boost_requirement_check(this_python: PythonInfo, tmp_path: Path) -> None:
    plan = make_plan(parse_release("24.10"), this_python, work_dir=tmp_path / "w")
    assert "boost" in plan.requirements
    c = check_boost(plan)
    assert c.ok and "1.79.0 downloaded by the build (boost_1_79_0.tar.gz; needs network" in c.detail
    headers = write_boost_headers(tmp_path / "inc")
    plan = make_plan(parse_release("24.10"), this_python, work_dir=tmp_path / "w", boost=headers)
    assert check_boost(plan).ok
    shutil.rmtree(headers / "boost")
    c = check_boost(plan)
    assert not c.ok and "libboost-dev" in c.fix


def test_releases_table_has_boost(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stub", "releases"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert rows["21.05"].rstrip().endswith(" -")
    assert rows["24.10"].rstrip().endswith(" 1.79.0")
    assert rows["25.11"].rstrip().endswith(" 1.80.0 (TRITON_BOOST_URL)")
