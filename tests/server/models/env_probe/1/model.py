"""Returns, as JSON, what the model saw: initialize() args, sys.prefix/flags, numpy, triton_textops, PATH."""

import json
import os
import sys

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        import triton_textops

        self.info = {
            "args": dict(args),
            "sys_prefix": sys.prefix,
            "sys_executable": sys.executable,
            "isolated": sys.flags.isolated,
            "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "numpy": np.__version__,
            "triton_textops": os.path.realpath(triton_textops.__file__),
            "path_head": os.environ.get("PATH", "").split(os.pathsep)[0],
            "model_dir": pb_utils.get_model_dir(),
        }

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            info = dict(self.info, x=x.tolist())
            out = np.array([json.dumps(info).encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("INFO", out)]))
        return responses
