import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X")
            y = pb_utils.Tensor.from_dlpack("Y", x.to_dlpack())
            z = pb_utils.Tensor.from_dlpack("Z", x)
            responses.append(pb_utils.InferenceResponse([y, z]))
        return responses
