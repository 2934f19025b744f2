"""config.pbtxt with Triton's protobuf schema: parse, errors, write, server normalization and JSON."""

from __future__ import annotations

import json
import sys

import pytest

from triton_textops.triton import config as cfg


def test_pb2_loaded_without_grpc_package_import():
    mod = cfg.model_config_pb2()
    assert mod.ModelConfig.DESCRIPTOR.full_name == "inference.ModelConfig"
    assert sys.modules["tritonclient.grpc.model_config_pb2"] is mod


def test_parse_error_names_file_and_line(tmp_path):
    p = tmp_path / "config.pbtxt"
    p.write_text('name: "m"\nbackend: "python"\nmax_batch_size: "eight"\n')
    with pytest.raises(cfg.ConfigError, match=rf"^{p}:3:\d+: "):
        cfg.load_config(p)
    p.write_text('name: "m"\nbogus_field: 1\n')
    with pytest.raises(cfg.ConfigError, match=rf"^{p}:2:\d+: .*bogus_field"):
        cfg.load_config(tmp_path)


def test_write_and_reload_roundtrip(tmp_path):
    config = cfg.config_from_dict(
        {
            "name": "m",
            "backend": "python",
            "max_batch_size": 8,
            "input": [{"name": "TEXT", "data_type": "TYPE_STRING", "dims": [-1]}],
            "output": [{"name": "IDS", "data_type": "TYPE_INT64", "dims": [-1, 2]}],
            "parameters": {"FORCE_CPU_ONLY_INPUT_TENSORS": {"string_value": "no"}},
        }
    )
    path = cfg.write_config(config, tmp_path)
    assert path == tmp_path / "config.pbtxt"
    again = cfg.load_config(path)
    assert again == config
    assert cfg.config_to_dict(again)["output"][0]["dims"] == [-1, 2]
    with pytest.raises(cfg.ConfigError, match="invalid model config"):
        cfg.config_from_dict({"name": "m", "no_such_key": 1})


def _server_json(text, tmp_path, name="probe", gpus=()):
    mdir = tmp_path / name
    (mdir / "1").mkdir(parents=True)
    (mdir / "1" / "model.py").write_text("")
    c = cfg.parse_config_text(text)
    c = cfg.autocomplete_backend_fields(c, name, mdir)
    c = cfg.normalize_config(c)
    c = cfg.normalize_instance_groups(c, supported_gpus=gpus)
    return cfg.config_to_json_dict(c)


def test_server_normalized_json_matches_observed_shape(tmp_path):
    d = _server_json(
        'max_batch_size: 8\ninput [{ name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] }]\n'
        'output [{ name: "OUT" data_type: TYPE_INT64 dims: [ -1 ] }]\ndynamic_batching {}\n'
        'instance_group [{ kind: KIND_CPU }]\n'
        'parameters: { key: "FORCE_CPU_ONLY_INPUT_TENSORS" value: { string_value: "no" } }\n',
        tmp_path,
    )
    assert d["name"] == "probe" and d["backend"] == "python" and d["default_model_filename"] == "model.py"
    assert d["input"][0] == {
        "name": "TEXT",
        "data_type": "TYPE_STRING",
        "format": "FORMAT_NONE",
        "dims": [-1],
        "is_shape_tensor": False,
        "allow_ragged_batch": False,
        "optional": False,
        "is_non_linear_format_io": False,
    }
    assert d["output"][0]["label_filename"] == "" and d["output"][0]["dims"] == [-1]
    assert d["parameters"] == {"FORCE_CPU_ONLY_INPUT_TENSORS": {"string_value": "no"}}
    assert d["instance_group"] == [
        {
            "name": "probe_0",
            "kind": "KIND_CPU",
            "count": 1,
            "gpus": [],
            "secondary_devices": [],
            "profile": [],
            "passive": False,
            "host_policy": "",
        }
    ]
    assert d["dynamic_batching"]["preferred_batch_size"] == [8]
    assert d["dynamic_batching"]["max_queue_delay_microseconds"] == 0  # uint64 rewritten as int
    assert d["version_policy"] == {"latest": {"num_versions": 1}}
    assert d["optimization"]["input_pinned_memory"] == {"enable": True}
    assert "model_transaction_policy" not in d
    json.dumps(d)


def test_default_instance_group_without_and_with_gpu(tmp_path):
    cpu = _server_json('input [{ name: "X" data_type: TYPE_FP32 dims: [ 1 ] }]', tmp_path, "a")
    assert cpu["instance_group"][0]["name"] == "a" and cpu["instance_group"][0]["kind"] == "KIND_CPU"
    gpu = _server_json('input [{ name: "X" data_type: TYPE_FP32 dims: [ 1 ] }]', tmp_path, "b", gpus=(0, 1))
    assert gpu["instance_group"][0]["kind"] == "KIND_GPU" and gpu["instance_group"][0]["gpus"] == [0, 1]


def test_validate_io_config():
    bad = cfg.parse_config_text('name: "m" input [{ name: "X" data_type: TYPE_FP32 }]')
    with pytest.raises(cfg.ConfigError, match="^model input 'X' must specify 'dims' for m$"):
        cfg.validate_io_config(bad)
    zero = cfg.parse_config_text('name: "m" output [{ name: "Y" data_type: TYPE_FP32 dims: [0] }]')
    with pytest.raises(cfg.ConfigError, match="dimension must be integer >= 1, or -1"):
        cfg.validate_io_config(zero)
