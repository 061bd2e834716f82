"""A stand-in for MLflow's tracking client, for tests only: MLflow is not packaged in Debian.

It writes MLflow's file store as MLflow documents and its FileStore writes it, independently of the C reader
under test: MLFLOW_TRACKING_URI=file:DIR, DIR/<experiment id>/meta.yaml, DIR/<experiment id>/<run id>/
with meta.yaml, params/<key> (the value) and metrics/<key> (one line a value: "<timestamp ms> <value> <step>").
Only log_param and log_metric, which hello-sweep.py calls, with one run started on first use (experiment 0,
"Default"), as mlflow does without start_run."""
import os
import time
import uuid

_run = None


def _store():
    uri = os.environ.get("MLFLOW_TRACKING_URI", "file:./mlruns")
    if not uri.startswith("file:"):
        raise RuntimeError("this stand-in writes only a file store, not " + uri)
    return uri[len("file:"):]


def _active():
    global _run
    if _run is None:
        exp = os.path.join(_store(), "0")
        os.makedirs(exp, exist_ok=True)
        if not os.path.exists(os.path.join(exp, "meta.yaml")):
            with open(os.path.join(exp, "meta.yaml"), "w") as f:
                f.write("artifact_location: file://%s\nexperiment_id: '0'\nlifecycle_stage: active\nname: Default\n" % exp)
        run_id = uuid.uuid4().hex
        _run = os.path.join(exp, run_id)
        for sub in ("metrics", "params", "tags", "artifacts"):
            os.makedirs(os.path.join(_run, sub))
        with open(os.path.join(_run, "meta.yaml"), "w") as f:
            f.write("experiment_id: '0'\nrun_id: %s\nrun_uuid: %s\nstatus: 1\nstart_time: %d\nlifecycle_stage: active\n"
                    % (run_id, run_id, int(time.time() * 1000)))
    return _run


def log_param(key, value):
    with open(os.path.join(_active(), "params", key), "w") as f:
        f.write(str(value))


def log_metric(key, value, step=0):
    with open(os.path.join(_active(), "metrics", key), "a") as f:
        f.write("%d %s %d\n" % (int(time.time() * 1000), repr(float(value)), step))
