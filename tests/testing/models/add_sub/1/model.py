# A model written the way Triton's own python_backend examples are (add/sub of two FP32 inputs):
# it knows nothing about triton_textops and must run unchanged under the harness and in a real server.
import json

# triton_python_backend_utils is available in every Triton Python model.
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])

        output0_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT0")
        output1_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT1")

        self.output0_dtype = pb_utils.triton_string_to_numpy(output0_config["data_type"])
        self.output1_dtype = pb_utils.triton_string_to_numpy(output1_config["data_type"])
        pb_utils.Logger.log_info("add_sub initialized: " + args["model_instance_name"])

    def execute(self, requests):
        output0_dtype = self.output0_dtype
        output1_dtype = self.output1_dtype

        responses = []
        for request in requests:
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")

            if in_0.as_numpy().shape != in_1.as_numpy().shape:
                error = pb_utils.TritonError("INPUT0 and INPUT1 must have the same shape")
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=error))
                continue

            out_0, out_1 = (
                in_0.as_numpy() + in_1.as_numpy(),
                in_0.as_numpy() - in_1.as_numpy(),
            )

            out_tensor_0 = pb_utils.Tensor("OUTPUT0", out_0.astype(output0_dtype))
            out_tensor_1 = pb_utils.Tensor("OUTPUT1", out_1.astype(output1_dtype))

            inference_response = pb_utils.InferenceResponse(output_tensors=[out_tensor_0, out_tensor_1])
            responses.append(inference_response)

        return responses

    def finalize(self):
        pb_utils.Logger.log_info("Cleaning up...")
