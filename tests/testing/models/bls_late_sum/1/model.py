"""BLS into a decoupled model whose responses all arrive after its execute() returned."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            n = pb_utils.get_input_tensor_by_name(request, "N").as_numpy()
            bls = pb_utils.InferenceRequest(
                model_name=b"late_repeat",  # bytes: the stub takes them like str
                inputs=[pb_utils.Tensor("N", n)],
                requested_output_names=[b"I"],
            )
            total, count, empty = 0, 0, 0
            for resp in bls.exec(decoupled=True):
                if resp.has_error():
                    raise pb_utils.TritonModelException(resp.error().message())
                count += 1
                out = pb_utils.get_output_tensor_by_name(resp, "I")
                if out is None:
                    empty += 1
                else:
                    total += int(out.as_numpy()[0])
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("SUM", np.array([total], np.int64)),
                        pb_utils.Tensor("COUNT", np.array([count], np.int32)),
                        pb_utils.Tensor("EMPTY", np.array([empty], np.int32)),
                    ]
                )
            )
        return responses
