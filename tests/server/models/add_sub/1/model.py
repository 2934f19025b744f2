"""add_sub, written the way Triton's own python_backend examples are (only numpy + pb_utils).

OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 (FP32), TEXT_OUT = upper-cased TEXT + b"|" + its length in
characters. A request whose INPUT0 and INPUT1 shapes differ gets an error response (the others still succeed).
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])
        self.output_dtypes = {}
        for name in ("OUTPUT0", "OUTPUT1", "TEXT_OUT"):
            cfg = pb_utils.get_output_config_by_name(model_config, name)
            self.output_dtypes[name] = pb_utils.triton_string_to_numpy(cfg["data_type"])

    def execute(self, requests):
        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            text = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy()
            if in_0.shape != in_1.shape:
                error = pb_utils.TritonError(
                    f"INPUT0 and INPUT1 must have the same shape, got {list(in_0.shape)} and {list(in_1.shape)}"
                )
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=error))
                continue
            out_0 = (in_0 + in_1).astype(self.output_dtypes["OUTPUT0"])
            out_1 = (in_0 - in_1).astype(self.output_dtypes["OUTPUT1"])
            decoded = [t.decode("utf-8") for t in text.reshape(-1)]
            upper = [f"{s.upper()}|{len(s)}".encode() for s in decoded]
            text_out = np.array(upper, dtype=self.output_dtypes["TEXT_OUT"]).reshape(text.shape)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("OUTPUT0", out_0),
                        pb_utils.Tensor("OUTPUT1", out_1),
                        pb_utils.Tensor("TEXT_OUT", text_out),
                    ]
                )
            )
        return responses

    def finalize(self):
        pass
