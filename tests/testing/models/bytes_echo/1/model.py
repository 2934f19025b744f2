import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT")
            arr = text.as_numpy()  # BYTES arrive as an object array of bytes, always on CPU
            kinds = sorted({type(x).__name__ for x in arr.ravel()})
            upper = np.vectorize(lambda b: b.upper(), otypes=[object])(arr)
            nbytes = np.vectorize(len, otypes=[np.int64])(arr)
            info = np.array([[",".join(kinds) + "|" + str(text.is_cpu())]] * arr.shape[0], dtype=object)
            responses.append(
                pb_utils.InferenceResponse(
                    [
                        pb_utils.Tensor("UPPER", upper),
                        pb_utils.Tensor("NBYTES", nbytes),
                        pb_utils.Tensor("KINDS", info),
                    ]
                )
            )
        return responses
