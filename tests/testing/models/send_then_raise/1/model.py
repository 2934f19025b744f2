"""Answers through the response sender, then fails (calls a method the sender does not have).

X >= 0: the response is sent without flags; X < 0: with TRITONSERVER_RESPONSE_COMPLETE_FINAL (this crashes
tritonserver 2.51: the response factory is deleted twice).
"""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            flags = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if x[0] < 0 else 0
            sender = request.get_response_sender()
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("Y", x * 2)]), flags=flags)
            sender.close()  # no such method: AttributeError after the response went out
        return [None] * len(requests)
