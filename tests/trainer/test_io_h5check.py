#!/usr/bin/python3
"""h5py side of the trainer's Keras-file tests (Debian's /usr/bin/python3 with python3-h5py, -numpy).

  check FILE [--pattern]     FILE is in the Keras 2.1.6 layout of keras_h5.h: root attributes, model_config
                             and training_config JSON, model_weights names/shapes, optimizer_weights,
                             batchai_training_state; with --pattern, every weight and accumulator holds
                             pattern() as test_io_keras.c writes it.
  write-variant FILE         a file as another Keras/h5py version could write it: variable-length str
                             attributes, layers numbered conv2d_5.. (a second model in one session),
                             weights pattern(salt 7); the C reader must load it by position.
  write-wrong-shape FILE     like `check`'s file but dense_1's kernel is (2304, 256).
  check-uniform FILE...      each FILE opens with h5py and all its weights equal one value (atomic test).
  damage FILE flip|nan       in place: flip the lowest bit of dense_1's kernel[0, 0], or make it NaN
                             (checksum and non-finite refusal tests).
Exit status 0 when every check holds; failures are printed one per line.
"""
import hashlib
import json
import sys

import h5py
import numpy as np

LAYERS = [
    ("conv2d_1", "Conv2D"), ("activation_1", "Activation"), ("conv2d_2", "Conv2D"), ("activation_2", "Activation"),
    ("max_pooling2d_1", "MaxPooling2D"), ("dropout_1", "Dropout"), ("conv2d_3", "Conv2D"),
    ("activation_3", "Activation"), ("conv2d_4", "Conv2D"), ("activation_4", "Activation"),
    ("max_pooling2d_2", "MaxPooling2D"), ("dropout_2", "Dropout"), ("flatten_1", "Flatten"), ("dense_1", "Dense"),
    ("activation_5", "Activation"), ("dropout_3", "Dropout"), ("dense_2", "Dense"), ("activation_6", "Activation"),
]
SHAPES = [  # (layer, kernel shape, bias length), Keras order
    ("conv2d_1", (3, 3, 3, 32), 32), ("conv2d_2", (3, 3, 32, 32), 32), ("conv2d_3", (3, 3, 32, 64), 64),
    ("conv2d_4", (3, 3, 64, 64), 64), ("dense_1", (2304, 512), 512), ("dense_2", (512, 10), 10),
]
N_PARAMS = 1250858
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def pattern(salt, count=N_PARAMS):
    i = np.arange(count, dtype=np.int64)
    return (((i * 2654435761 + salt) % 1000003) / 1000003.0 - 0.5).astype(np.float32)


def tensors():
    """(layer, weight, shape) in parameter-array order."""
    for layer, kshape, blen in SHAPES:
        yield layer, "kernel:0", kshape
        yield layer, "bias:0", (blen,)


def split(flat):
    out, at = [], 0
    for _, _, shape in tensors():
        n = int(np.prod(shape))
        out.append(flat[at:at + n].reshape(shape))
        at += n
    assert at == N_PARAMS
    return out


def fixed_bytes(attr, what):
    """Keras 2.1.6 + h5py store bytes as fixed-length strings: numpy bytes_ scalars / S arrays."""
    expect(isinstance(attr, (np.bytes_, bytes)) or (isinstance(attr, np.ndarray) and attr.dtype.kind == "S"),
           "%s: not a fixed-length byte string (%r)" % (what, type(attr)))


def check(path, with_pattern):
    f = h5py.File(path, "r")
    for key in ("keras_version", "backend", "model_config", "training_config"):
        expect(key in f.attrs, "root attribute %s missing" % key)
        fixed_bytes(f.attrs.get(key, b""), key)
    expect(f.attrs["keras_version"] == b"2.1.6", "keras_version %r" % f.attrs["keras_version"])
    expect(f.attrs["backend"] == b"tensorflow", "backend %r" % f.attrs["backend"])

    mc = json.loads(f.attrs["model_config"].decode("utf-8"))
    # Python's json.dumps of the parsed object gives back the same bytes: key order, separators and float
    # formatting are exactly what Keras (json.dumps) writes.
    expect(json.dumps(mc).encode() == f.attrs["model_config"], "model_config differs from json.dumps output")
    expect(json.dumps(json.loads(f.attrs["training_config"])).encode() == f.attrs["training_config"],
           "training_config differs from json.dumps output")
    expect(mc["class_name"] == "Sequential", "model class %s" % mc["class_name"])
    layers = mc["config"]
    expect([(l["config"]["name"], l["class_name"]) for l in layers] == LAYERS, "model_config layer list")
    first = layers[0]["config"]
    expect(first["batch_input_shape"] == [None, 32, 32, 3] and first["dtype"] == "float32", "input layer config")
    expect(list(first)[:4] == ["name", "trainable", "batch_input_shape", "dtype"], "Layer key order %s" % list(first))
    for l in layers:
        c = l["config"]
        expect(c["trainable"] is True, "%s not trainable" % c["name"])
        if l["class_name"] == "Conv2D":
            expect(c["kernel_size"] == [3, 3] and c["strides"] == [1, 1] and c["activation"] == "linear" and
                   c["use_bias"] is True and c["data_format"] == "channels_last" and c["dilation_rate"] == [1, 1],
                   "%s conv config" % c["name"])
            expect(c["kernel_initializer"] == {"class_name": "VarianceScaling", "config": {
                "scale": 1.0, "mode": "fan_avg", "distribution": "uniform", "seed": None}}, "glorot_uniform")
            expect(c["bias_initializer"] == {"class_name": "Zeros", "config": {}}, "zeros")
        if l["class_name"] == "Dense":
            expect(c["activation"] == "linear" and c["use_bias"] is True, "%s dense config" % c["name"])
        if l["class_name"] == "MaxPooling2D":
            expect(c["pool_size"] == [2, 2] and c["strides"] == [2, 2] and c["padding"] == "valid", "pool config")
    conv = {l["config"]["name"]: l["config"] for l in layers}
    expect([conv[n]["filters"] for n in ("conv2d_1", "conv2d_2", "conv2d_3", "conv2d_4")] == [32, 32, 64, 64],
           "filters")
    expect([conv[n]["padding"] for n in ("conv2d_1", "conv2d_2", "conv2d_3", "conv2d_4")] ==
           ["same", "valid", "same", "valid"], "paddings")
    expect(conv["dense_1"]["units"] == 512 and conv["dense_2"]["units"] == 10, "units")
    expect([conv[n]["rate"] for n in ("dropout_1", "dropout_2", "dropout_3")] == [0.25, 0.25, 0.5], "dropout rates")
    expect(conv["activation_5"]["activation"] == "relu" and conv["activation_6"]["activation"] == "softmax",
           "activations")

    tc = json.loads(f.attrs["training_config"].decode("utf-8"))
    opt = tc["optimizer_config"]
    expect(opt["class_name"] == "RMSprop", "optimizer %s" % opt["class_name"])
    expect(set(opt["config"]) == {"lr", "rho", "decay", "epsilon"}, "RMSprop config keys %s" % list(opt["config"]))
    expect(tc["loss"] == "categorical_crossentropy" and tc["metrics"] == ["accuracy"], "loss/metrics")
    expect(tc["sample_weight_mode"] is None and tc["loss_weights"] is None, "sample_weight_mode/loss_weights")

    mw = f["model_weights"]
    fixed_bytes(mw.attrs["layer_names"], "layer_names")
    expect([n.decode() for n in mw.attrs["layer_names"]] == [n for n, _ in LAYERS], "layer_names")
    expect(mw.attrs["backend"] == b"tensorflow" and mw.attrs["keras_version"] == b"2.1.6", "model_weights attrs")
    weights = []
    for name, _ in LAYERS:
        wn = list(mw[name].attrs["weight_names"])
        if name.startswith(("conv2d", "dense")):
            expect([w.decode() for w in wn] == [name + "/kernel:0", name + "/bias:0"], "%s weight_names" % name)
            for w in wn:
                weights.append(mw[name][w.decode()][()])
        else:
            expect(len(wn) == 0, "%s has weight_names %s" % (name, wn))
            expect(len(mw[name]) == 0, "%s has datasets" % name)
    for (layer, weight, shape), w in zip(tensors(), weights):
        expect(w.shape == shape and w.dtype == np.float32, "%s/%s: %s %s" % (layer, weight, w.shape, w.dtype))
    expect(sum(w.size for w in weights) == N_PARAMS, "parameter count")

    ow = f["optimizer_weights"]
    names = [n.decode() for n in ow.attrs["weight_names"]]
    expect(names == ["training/RMSprop/Variable%s:0" % ("_%d" % i if i else "") for i in range(12)],
           "optimizer weight_names %s" % names)
    acc = [ow[n][()] for n in names]
    for (layer, weight, shape), a in zip(tensors(), acc):
        expect(a.shape == shape and a.dtype == np.float32, "accumulator for %s/%s: %s" % (layer, weight, a.shape))

    st = f["batchai_training_state"].attrs
    for key in ("format_version", "iterations", "epoch", "lr", "rho", "decay", "epsilon", "seed", "world_size",
                "threads", "step", "batch", "generator", "weights_sha256", "optimizer_sha256"):
        expect(key in st and np.ndim(st[key]) == 0, "state attribute %s" % key)
    expect(st["iterations"].dtype == np.uint64 and st["seed"].dtype == np.uint64, "uint64 state attributes")
    expect(st["format_version"] == 2, "format_version %s" % st["format_version"])
    # The sums as hashlib computes them over the datasets' float32 little-endian bytes, in Keras order.
    for key, arrays in (("weights_sha256", weights), ("optimizer_sha256", acc)):
        want = hashlib.sha256(b"".join(a.astype("<f4").tobytes() for a in arrays)).hexdigest()
        expect(st[key].decode() == want, "%s %s, hashlib says %s" % (key, st[key], want))

    if with_pattern:
        for (layer, weight, _), w, want in zip(tensors(), weights, split(pattern(0))):
            expect(np.array_equal(w, want), "%s/%s values differ from the pattern" % (layer, weight))
        for (layer, weight, _), a, want in zip(tensors(), acc, split(pattern(1))):
            expect(np.array_equal(a, want), "accumulator %s/%s values differ" % (layer, weight))
        # test_io_keras.c writes this state; the JSON holds Keras's float32-rounded values.
        expect(st["iterations"] == 12345678901 and st["epoch"] == 7 and st["seed"] == 2**63 + 5 and
               st["world_size"] == 4, "state values %s" % dict(st))
        expect(st["lr"] == 4e-4 and st["rho"] == 0.9 and st["decay"] == 1e-6 and st["epsilon"] == 1e-7,
               "state floats")
        expect(opt["config"] == {"lr": float(np.float32(4e-4)), "rho": float(np.float32(0.9)),
                                 "decay": float(np.float32(1e-6)), "epsilon": 1e-07}, "RMSprop config %s" % opt)
    f.close()


def write_variant(path):
    """Variable-length str attributes and renumbered layers, as a different h5py/Keras session may write."""
    renumber = {"conv2d_%d" % i: "conv2d_%d" % (i + 4) for i in range(1, 5)}
    renumber.update({"dense_1": "dense_3", "dense_2": "dense_4"})
    values = split(pattern(7))
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = "2.2.4"
        f.attrs["backend"] = "tensorflow"
        mw = f.create_group("model_weights")
        names = [renumber.get(n, n) for n, _ in LAYERS]
        mw.attrs["layer_names"] = names
        k = 0
        for name in names:
            g = mw.create_group(name)
            if name.startswith(("conv2d", "dense")):
                g.attrs["weight_names"] = [name + "/kernel:0", name + "/bias:0"]
                g[name + "/kernel:0"] = values[k]
                g[name + "/bias:0"] = values[k + 1]
                k += 2
            else:
                g.attrs["weight_names"] = np.array([], dtype=np.float64)


def write_wrong_shape(path):
    values = split(pattern(0))
    with h5py.File(path, "w") as f:
        mw = f.create_group("model_weights")
        mw.attrs["layer_names"] = [n.encode() for n, _ in LAYERS]
        k = 0
        for name, _ in LAYERS:
            g = mw.create_group(name)
            if name.startswith(("conv2d", "dense")):
                g.attrs["weight_names"] = [(name + "/kernel:0").encode(), (name + "/bias:0").encode()]
                kernel = values[k][:, :256] if name == "dense_1" else values[k]
                g[name + "/kernel:0"] = kernel
                g[name + "/bias:0"] = values[k + 1]
                k += 2
            else:
                g.attrs["weight_names"] = np.array([], dtype=np.float64)


def check_uniform(paths):
    for path in paths:
        try:
            with h5py.File(path, "r") as f:
                mw = f["model_weights"]
                vals = np.concatenate([mw[l][l + "/" + w][()].ravel() for l, w, _ in tensors()])
                expect(vals.size == N_PARAMS and np.all(vals == vals[0]), "%s: mixed contents" % path)
        except Exception as e:  # any failure to open or read is what the test looks for
            failures.append("%s: %s" % (path, e))


def damage(path, how):
    with h5py.File(path, "r+") as f:
        d = f["model_weights/dense_1/dense_1/kernel:0"]
        v = d[()]
        if how == "flip":
            v.view(np.uint32)[0, 0] ^= 1
        else:
            v[0, 0] = np.nan
        d[...] = v


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "check":
        check(path, "--pattern" in sys.argv[3:])
    elif mode == "write-variant":
        write_variant(path)
    elif mode == "write-wrong-shape":
        write_wrong_shape(path)
    elif mode == "damage":
        damage(path, sys.argv[3])
    elif mode == "check-uniform":
        check_uniform(sys.argv[2:])
    else:
        sys.exit("unknown mode " + mode)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
