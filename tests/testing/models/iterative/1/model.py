"""Reschedules each request until it has been executed N times, then answers with what each execution saw."""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.seen = {}  # correlation id -> [(flags, request id)] of the executions so far

    def execute(self, requests):
        responses = []
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy()[0])
            corr = request.correlation_id()
            calls = self.seen.setdefault(corr, [])
            calls.append([request.flags(), request.request_id()])
            if len(calls) < n:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                responses.append(None)
                continue
            del self.seen[corr]
            info = {"calls": calls, "correlation_id_set": corr != 0}
            out = pb_utils.Tensor("INFO", np.array([json.dumps(info).encode()], dtype=object))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
