"""Sends one response per execution (OUT = responses still to come) and reschedules until none remain."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.remaining = {}  # correlation id -> responses still to send

    def execute(self, requests):
        for request in requests:
            corr = request.correlation_id()
            if corr not in self.remaining:
                self.remaining[corr] = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            self.remaining[corr] -= 1
            left = self.remaining[corr]
            response = pb_utils.InferenceResponse(
                [
                    pb_utils.Tensor("OUT", np.array([left], np.int32)),
                    pb_utils.Tensor("FLAGS", np.array([request.flags()], np.int32)),
                ]
            )
            sender = request.get_response_sender()
            if left <= 0:
                del self.remaining[corr]
                sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            else:
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                sender.send(response)
        return None
