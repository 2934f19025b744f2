"""Sends every response from a background thread, after execute() has returned (like a streaming generator)."""

import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.threads = []

    def execute(self, requests):
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy()[0])
            t = threading.Thread(target=self.stream, args=(request.get_response_sender(), n))
            t.start()
            self.threads.append(t)
        return None

    def stream(self, sender, n):
        time.sleep(0.05)  # execute() has long returned when the first response goes out
        for i in range(n):
            sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("I", np.array([i], np.int32))]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def finalize(self):
        for t in self.threads:
            t.join()
