"""The TFLite zoo's peer runner: run by tools/tflite_zoo.py as a script under the peers'
interpreter (--peer-python), never imported by tf2ir: it imports only numpy and the peer.

    PEER_PYTHON tools/tflite_zoo_peer.py JOB.json

JOB.json: {"peer": "tf2onnx" | "openvino", "repeats": N, "threads": T, "items": [{"tflite":
M.tflite, "inputs": M.npz (in0, in1, ... in the model's input order), "work": DIR, "result":
R.json}]}. For each item the peer converts the .tflite (timed: tf2onnx.convert.from_tflite,
what `python -m tf2onnx.convert --tflite` runs, in onnxruntime, the ONNX file kept for
the zoo to time beside tf2ir's; openvino.convert_model, then
compiled for the CPU in f32), runs it on the inputs, times `repeats` runs after a warm-up
(median), and writes R.json ({converted, convert_s, ms, error, outputs[, onnx]}) and the outputs as
OUT.npz (out0, out1, ... in the model's output order). One item's failure is its R.json's
error line; the others go on.
"""

import json
import os
import statistics
import sys
import time
import traceback

import numpy as np


def _one_line(text, limit=300):
    """One line; a long one keeps its start and its end (where the reason often is)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit // 2 - 3] + " ... " + text[-(limit // 2 - 2):]


def _median_ms(run, repeats):
    times = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000.0)
    return round(statistics.median(times), 3)


def _tf2onnx(path, arrays, work, repeats, threads, result):
    import onnxruntime as ort
    import tf2onnx
    onnx_path = os.path.join(work, os.path.basename(path)[:-len(".tflite")] + ".tf2onnx.onnx")
    start = time.perf_counter()
    tf2onnx.convert.from_tflite(path, output_path=onnx_path)
    result.update(converted=True, convert_s=round(time.perf_counter() - start, 3))
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])
    feeds = {i.name: a for i, a in zip(session.get_inputs(), arrays)}
    outputs = session.run(None, feeds)
    ms = _median_ms(lambda: session.run(None, feeds), repeats)
    result["onnx"] = onnx_path       # the zoo times it again beside tf2ir's, then removes it
    return outputs, ms


def _openvino(path, arrays, work, repeats, threads, result):
    import openvino as ov
    start = time.perf_counter()
    model = ov.convert_model(path)
    result.update(converted=True, convert_s=round(time.perf_counter() - start, 3))
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                      "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    feeds = {i: a for i, a in enumerate(arrays)}
    request.infer(feeds)
    outputs = [np.array(request.get_output_tensor(i).data) for i in range(len(compiled.outputs))]
    ms = _median_ms(lambda: request.infer(feeds), repeats)
    return outputs, ms


PEERS = {"tf2onnx": _tf2onnx, "openvino": _openvino}


def main(argv):
    with open(argv[0]) as f:
        job = json.load(f)
    run = PEERS[job["peer"]]
    for item in job["items"]:
        result = {"converted": False, "convert_s": None, "ms": None, "error": "", "outputs": None}
        try:
            with np.load(item["inputs"]) as data:
                arrays = [data[f"in{i}"] for i in range(len(data.files))]
            outputs, ms = run(item["tflite"], arrays, item["work"], job["repeats"],
                              job["threads"], result)
            result["ms"] = ms
            out_path = item["result"][:-len(".json")] + ".npz"
            np.savez(out_path, **{f"out{i}": np.asarray(o) for i, o in enumerate(outputs)})
            result["outputs"] = out_path
        except BaseException as exc:   # noqa: B036 - the row records any failure
            traceback.print_exc()
            lines = [ln for ln in str(exc).splitlines() if ln.strip()]
            stage = "run" if result["converted"] else "convert"
            result["error"] = _one_line(f"{stage}: {type(exc).__name__}: "
                                        f"{lines[-1] if lines else ''}")
            if isinstance(exc, KeyboardInterrupt):
                raise
        with open(item["result"], "w") as f:
            json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
