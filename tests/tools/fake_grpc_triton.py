"""A fake Triton gRPC endpoint for tests/tools/test_probe_stream.py, run as its own process (tritonclient's
generated ``inference`` protos clash with the KServe SDK's in one process): grpcio serving ``ModelStreamInfer``,
the model name saying how to answer. Prints its port, serves until stdin closes.

A "good*" model checks the request is the one the probe builds for test_probe_stream.CONFIG and answers an error
naming what differs.
"""

from __future__ import annotations

import struct
import sys
import time
from concurrent import futures

import grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc


def _response(text: bytes = b"Hi", score: float = 0.5, final: bool = False, outputs: bool = True):
    r = service_pb2.ModelInferResponse(model_name="postprocessing", id="liveness-probe")
    if outputs:
        r.outputs.add(name="OUTPUT", datatype="BYTES", shape=[1, 1])
        r.outputs.add(name="SCORE", datatype="FP32", shape=[1, 1])
        r.raw_output_contents.extend([struct.pack("<I", len(text)) + text, struct.pack("<f", score)])
    if final:
        r.parameters["triton_final_response"].bool_param = True
    return service_pb2.ModelStreamInferResponse(infer_response=r)


def _wrong(req) -> str | None:
    """What differs from the request the probe should send (None: nothing)."""
    got = {
        "id": req.id, "final": req.parameters["triton_enable_empty_final_response"].bool_param,
        "inputs": [(i.name, i.datatype, list(i.shape)) for i in req.inputs],
        "raw": [bytes(r) for r in req.raw_input_contents],
    }
    text = b"It was a fine day."
    want = {
        "id": "liveness-probe", "final": True,
        "inputs": [("TOKENS_BATCH", "INT32", [1, 1, 1]), ("SEQUENCE_LENGTH", "INT32", [1, 1]), ("TEXT", "BYTES", [1, 1])],
        "raw": [struct.pack("<i", 1), struct.pack("<i", 1), struct.pack("<I", len(text)) + text],
    }
    return None if got == want else f"unexpected request {got} != {want}"


class FakeTriton(service_pb2_grpc.GRPCInferenceServiceServicer):
    def ModelStreamInfer(self, request_iterator, context):  # noqa: N802
        for req in request_iterator:
            mode = req.model_name
            if mode.startswith("good") and _wrong(req):
                yield service_pb2.ModelStreamInferResponse(error_message=_wrong(req))
            elif mode == "good":  # a stream of pieces, then Triton's empty final response
                yield from (_response(b"Hi"), _response(" 😀".encode()), _response(final=True, outputs=False))
            elif mode == "good_no_final":  # pieces, the final flag on the last, then the stream's end
                yield from (_response(), _response(final=True))
            elif mode == "dead":
                yield service_pb2.ModelStreamInferResponse(
                    error_message="Failed to process the request(s) for model 'postprocessing_0_0', message: "
                                  "Stub process 'postprocessing_0_0' is not healthy.")
            elif mode == "nan":
                yield _response(score=float("nan"))
            elif mode == "wrong":
                r = _response()
                r.infer_response.outputs[1].datatype = "FP64"
                yield r
            elif mode == "slow":
                time.sleep(3)
                yield _response()
            # "silent": nothing, the stream just ends


def main() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(FakeTriton(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    sys.stdin.read()
    server.stop(0)


if __name__ == "__main__":
    main()
