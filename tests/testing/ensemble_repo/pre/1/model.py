import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()
            lens = np.array([len(t.decode("utf-8")) for t in text], dtype=np.int64)
            up = np.array([t.decode("utf-8").upper() for t in text], dtype=object)
            responses.append(
                pb_utils.InferenceResponse([pb_utils.Tensor("LENS", lens), pb_utils.Tensor("TEXT_UP", up)])
            )
        return responses
