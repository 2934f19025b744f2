"""Doubles X on whichever device it arrives; branches on is_cpu() as the PB README says to."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X")
            where = np.array([["cpu" if x.is_cpu() else "gpu"]] * x.shape()[0], dtype=object)
            if x.is_cpu():
                y = pb_utils.Tensor("Y", x.as_numpy() * 2)
            else:
                import cupy as cp

                y = pb_utils.Tensor.from_dlpack("Y", cp.from_dlpack(x) * 2)
            responses.append(pb_utils.InferenceResponse([y, pb_utils.Tensor("WHERE", where)]))
        return responses
