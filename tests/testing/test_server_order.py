"""The harness visits a request's inputs in tritonserver's order: libstdc++ ``std::unordered_map`` iteration."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from triton_textops.testing.harness import cxx_string_hash, server_input_order

# (client order, order in tritonserver 2.51's "Got input(s) [...]"), observed with tests/server (add_sub)
OBSERVED = [
    (["INPUT0", "INPUT1"], ["INPUT1", "INPUT0"]),
    (["E2", "aa", "Zed", "INPUT0"], ["Zed", "aa", "INPUT0", "E2"]),
    (["dd", "INPUT0", "Zed", "bb", "aa"], ["aa", "bb", "Zed", "INPUT0", "dd"]),
    (["E3", "ee", "aa", "INPUT0", "hh", "INPUT1"], ["INPUT1", "INPUT0", "aa", "hh", "ee", "E3"]),
    (["INPUT1", "E1", "ii", "E3", "bb", "gg", "Zed"], ["gg", "bb", "Zed", "E3", "ii", "E1", "INPUT1"]),
    (["gg", "E3", "E2", "aa", "INPUT0", "cc", "ee", "Zed", "dd"], ["dd", "ee", "aa", "INPUT0", "E2", "Zed", "E3", "cc", "gg"]),
    # 14 and 16 names: past 13 elements the table grows from 13 to 29 buckets (a rehash)
    (
        ["ee", "E3", "gg", "ii", "dd", "E1", "hh", "E2", "cc", "INPUT0", "Zed", "bb", "INPUT1", "ff"],
        ["ee", "E1", "hh", "E3", "ff", "Zed", "gg", "ii", "E2", "INPUT0", "cc", "bb", "dd", "INPUT1"],
    ),
    (
        ["INPUT0", "ee", "Zed", "ii", "E1", "aa", "TEXT", "dd", "INPUT1", "cc", "ff", "bb", "gg", "E3", "E2", "hh"],
        ["hh", "E2", "E3", "INPUT0", "ee", "E1", "ii", "TEXT", "aa", "dd", "INPUT1", "gg", "Zed", "ff", "cc", "bb"],
    ),
]

CXX = r"""
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_map>
int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::unordered_map<std::string, int> m;
    std::istringstream words(line);
    std::string w, first;
    while (words >> w) { m.emplace(w, 0); if (first.empty()) first = w; }
    std::cout << std::hash<std::string>{}(first);
    for (auto& p : m) std::cout << " " << p.first;
    std::cout << "\n";
  }
}
"""


@pytest.mark.parametrize(("client", "server"), OBSERVED)
def test_matches_orders_observed_in_tritonserver(client, server):
    assert server_input_order(client) == server


def test_two_inputs_always_come_reversed():
    rnd = random.Random(0)
    for _ in range(200):
        a, b = (f"n{rnd.randrange(10**6)}" for _ in range(2))
        if a != b:
            assert server_input_order([a, b]) == [b, a]


def test_duplicates_and_small_cases():
    assert server_input_order([]) == []
    assert server_input_order(["X"]) == ["X"]
    assert server_input_order(["A", "B", "A"]) == server_input_order(["A", "B"])


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (libstdc++) to compare against")
def test_matches_libstdcxx_unordered_map(tmp_path):
    src = tmp_path / "order.cc"
    src.write_text(CXX)
    exe = tmp_path / "order"
    subprocess.run(["g++", "-O1", "-o", str(exe), str(src)], check=True, capture_output=True)
    rnd = random.Random(7)
    alphabet = "abcXYZ_019é"
    cases = []
    for _ in range(400):
        n = rnd.choice([1, 2, 3, 5, 12, 13, 14, 29, 30, 60, 130])
        names = list(dict.fromkeys("".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 20))) for _ in range(n)))
        cases.append(names)
    out = subprocess.run([str(exe)], input="\n".join(" ".join(c) for c in cases) + "\n", capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert len(out) == len(cases)
    for names, line in zip(cases, out):
        h, *order = line.split(" ")
        assert int(h) == cxx_string_hash(names[0].encode())
        assert order == server_input_order(names), names
