import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            score = pb_utils.get_input_tensor_by_name(request, "SCORE").as_numpy()
            words = pb_utils.get_input_tensor_by_name(request, "WORDS").as_numpy()
            labels = np.array(
                [w + (b":long" if s > 0.5 else b":short") for w, s in zip(words, score)], dtype=object
            )
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("LABEL", labels)]))
        return responses
