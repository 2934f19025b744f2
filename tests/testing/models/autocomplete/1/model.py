import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        inputs = [{"name": "X", "data_type": "TYPE_INT32", "dims": [-1]}]
        outputs = [{"name": "Y", "data_type": "TYPE_INT32", "dims": [-1]}]
        config = auto_complete_model_config.as_dict()
        input_names = [i["name"] for i in config["input"]]
        output_names = [o["name"] for o in config["output"]]
        for inp in inputs:
            if inp["name"] not in input_names:
                auto_complete_model_config.add_input(inp)
        for out in outputs:
            if out["name"] not in output_names:
                auto_complete_model_config.add_output(out)
        auto_complete_model_config.set_max_batch_size(4)
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def initialize(self, args):
        self.args = args
        self.config = json.loads(args["model_config"])

    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", (x * 2).astype(np.int32))]))
        return out
