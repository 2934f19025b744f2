import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        try:
            pb_utils.InferenceRequest(model_name="add_sub", inputs=[], requested_output_names=[]).exec()
        except pb_utils.TritonModelException as e:
            self.init_error = str(e)

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "A").as_numpy()
            target = pb_utils.get_input_tensor_by_name(request, "TARGET").as_numpy()[0].decode()
            bls = pb_utils.InferenceRequest(
                model_name=target,
                inputs=[pb_utils.Tensor("INPUT0", a), pb_utils.Tensor("INPUT1", a)],
                requested_output_names=["OUTPUT0"],
            )
            resp = bls.exec()
            if resp.has_error():
                out = [
                    pb_utils.Tensor("SUM", np.zeros(4, np.float32)),
                    pb_utils.Tensor("ERR", np.array([resp.error().message()], dtype=object)),
                ]
            else:
                names = sorted(t.name() for t in resp.output_tensors())
                s = pb_utils.get_output_tensor_by_name(resp, "OUTPUT0").as_numpy()
                out = [pb_utils.Tensor("SUM", s), pb_utils.Tensor("ERR", np.array([",".join(names)], dtype=object))]
            responses.append(pb_utils.InferenceResponse(out))
        return responses
