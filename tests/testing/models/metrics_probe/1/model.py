import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        name = args["model_name"]
        self.requests = pb_utils.MetricFamily(
            name="textops_probe_requests", description="Requests seen by the probe", kind=pb_utils.MetricFamily.COUNTER
        )
        self.values = pb_utils.MetricFamily(
            name="textops_probe_value", description="Last and summed input values", kind=pb_utils.MetricFamily.GAUGE
        )
        self.sizes = pb_utils.MetricFamily(
            name="textops_probe_sizes", description="Input values", kind=pb_utils.MetricFamily.HISTOGRAM
        )
        self.count = self.requests.Metric(labels={"model": name, "version": args["model_version"]})
        self.last = self.values.Metric(labels={"model": name, "slot": "last"})
        self.total = self.values.Metric(labels={"slot": "sum", "model": name})
        self.hist = self.sizes.Metric(labels={"model": name}, buckets=[1.0, 2.5, 10.0])

    def execute(self, requests):
        responses = []
        for request in requests:
            x = float(pb_utils.get_input_tensor_by_name(request, "X").as_numpy()[0])
            self.count.increment(1)
            self.last.set(x)
            self.total.increment(x)
            self.hist.observe(x)
            info = {
                "count": self.count.value(),
                "last": self.last.value(),
                "total": self.total.value(),
            }
            out = pb_utils.Tensor("INFO", np.array([json.dumps(info).encode()], dtype=object))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
