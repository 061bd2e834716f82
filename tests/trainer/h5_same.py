#!/usr/bin/python3
"""h5_same.py A.h5 B.h5: two Keras files from cifar-train hold the same model, checked with h5py dataset by
dataset (model_weights and optimizer_weights, bit for bit) and the same training position (iterations,
epoch). Exit 0 and one line saying what was compared, or 1 naming the first difference."""
import sys

import h5py
import numpy as np

a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
n = 0


def cmp(name, obj):
    global n
    if isinstance(obj, h5py.Dataset):
        if name not in b:
            sys.exit("FAIL: %s missing from %s" % (name, sys.argv[2]))
        x, y = obj[()], b[name][()]
        if x.shape != y.shape or not np.array_equal(x, y):
            sys.exit("FAIL: %s differs (max diff %g)" % (name, np.abs(x - y).max() if x.shape == y.shape else -1))
        n += 1


for group in ("model_weights", "optimizer_weights"):
    a[group].visititems(lambda k, o: cmp(group + "/" + k, o))
sa, sb = dict(a["batchai_training_state"].attrs), dict(b["batchai_training_state"].attrs)
if sa["iterations"] != sb["iterations"] or sa["epoch"] != sb["epoch"]:
    sys.exit("FAIL: training state differs: %s vs %s" % (sa, sb))
print("same model: %d datasets identical, iterations %d, epoch %d" % (n, sa["iterations"], sa["epoch"]))
