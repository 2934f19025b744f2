import json

import numpy as np
import triton_python_backend_utils as pb_utils


def attempt(fn):
    try:
        fn()
    except pb_utils.TritonModelException as exc:
        return str(exc)
    return "ok"


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
                # operations a kind does not support (gauge.observe and histogram.increment are left out:
                # they crash tritonserver 2.51)
                "errors": [
                    attempt(lambda: self.count.increment(-1)),
                    attempt(lambda: self.count.set(1.0)),
                    attempt(lambda: self.count.observe(1.0)),
                    attempt(lambda: self.hist.value()),
                    attempt(lambda: self.hist.set(1.0)),
                    attempt(lambda: self.sizes.Metric(labels={"a": "b"})),
                    attempt(lambda: self.requests.Metric(buckets=[1.0])),
                    attempt(lambda: self.requests.Metric(labels="x")),
                ],
            }
            out = pb_utils.Tensor("INFO", np.array([json.dumps(info).encode()], dtype=object))
            responses.append(pb_utils.InferenceResponse([out]))
        return responses
