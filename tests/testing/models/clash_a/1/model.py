import numpy as np
import triton_python_backend_utils as pb_utils
from helpers import WHO  # a sibling module: found through the version dir on sys.path


class TritonPythonModel:
    def execute(self, requests):
        import helpers  # imported again at execute time: must still be this model's own

        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("WHO", np.array([WHO + "/" + helpers.WHO + "/" + __name__], dtype=object))])
            for _ in requests
        ]
