"""Returns something wrong from execute, chosen by the request parameter "mode"."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        mode = json.loads(requests[0].parameters()).get("mode", "ok")
        good = [pb_utils.InferenceResponse([pb_utils.Tensor("Y", np.array([1], np.int32))]) for _ in requests]
        if mode == "tuple":
            return tuple(good)
        if mode == "short":
            return good[:-1]
        if mode == "dict":
            return [{"Y": 1} for _ in requests]
        if mode == "raise":
            raise ValueError("boom from execute")
        if mode == "tensor_list":
            pb_utils.Tensor("Y", [1, 2])  # TypeError: only numpy arrays
        if mode == "sender_then_return":
            requests[0].get_response_sender().send(good[0], flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return good
        if mode == "error_response":
            return [
                pb_utils.InferenceResponse(error=pb_utils.TritonError("bad X", pb_utils.TritonError.INVALID_ARG))
                for _ in requests
            ]
        if mode == "extra_output":
            extra = pb_utils.Tensor("NOT_IN_CONFIG", np.array([7], np.int32))
            return [
                pb_utils.InferenceResponse([pb_utils.Tensor("Y", np.array([1], np.int32)), extra])
                for _ in requests
            ]
        return good
