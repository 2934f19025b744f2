"""One unsupported metric operation per request (tritonserver 2.51 may crash on any of them)."""

import numpy as np
import triton_python_backend_utils as pb_utils

OPS = [
    lambda m: m.count.increment(-1),
    lambda m: m.count.set(1.0),
    lambda m: m.count.observe(1.0),
    lambda m: m.gauge.observe(1.0),
    lambda m: m.hist.value(),
    lambda m: m.hist.increment(1.0),
    lambda m: m.hist.set(1.0),
    lambda m: m.histograms.Metric(labels={"a": "b"}),
    lambda m: m.counters.Metric(labels={"a": "b"}, buckets=[1.0]),
    lambda m: m.counters.Metric(labels="a"),
]


class TritonPythonModel:
    def initialize(self, args):
        kinds = pb_utils.MetricFamily
        self.counters = kinds(name="textops_err_counter", description="c", kind=kinds.COUNTER)
        self.gauges = kinds(name="textops_err_gauge", description="g", kind=kinds.GAUGE)
        self.histograms = kinds(name="textops_err_hist", description="h", kind=kinds.HISTOGRAM)
        self.count = self.counters.Metric(labels={"m": "1"})
        self.gauge = self.gauges.Metric(labels={"m": "1"})
        self.hist = self.histograms.Metric(labels={"m": "1"}, buckets=[1.0])

    def execute(self, requests):
        responses = []
        for request in requests:
            op = OPS[int(request.inputs()[0].as_numpy()[0])]
            try:
                op(self)
                text = "ok"
            except pb_utils.TritonModelException as exc:
                text = str(exc)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("INFO", np.array([text.encode()], dtype=object))]))
        return responses
