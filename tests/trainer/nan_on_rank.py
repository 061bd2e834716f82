"""nan_on_rank.py CHECKPOINT: rewrites a cifar-train checkpoint (format 2, its weights_sha256 recomputed) so
that the first training step resumed from it, at --batch-size 1 on 2 ranks, has a non-finite loss on rank 1
only. Dropout is the one thing the ranks draw differently: one dense_1 unit j is made to output 1 for any
image (zero kernel column, bias 1), and dense_2 weighs it 3e38 into class 0, so the logit overflows to inf
(the loss is NaN) exactly where dropout_3 keeps unit j. j is a unit that rank 1's mask keeps and rank 0's
drops at that step (trainer/bench/cifar_rng.py draws them as the trainer does). Prints j."""
import hashlib
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "trainer", "bench"))
import cifar_rng  # noqa: E402

LAYERS = ("conv2d_1", "conv2d_2", "conv2d_3", "conv2d_4", "dense_1", "dense_2")


def main():
    with h5py.File(sys.argv[1], "r+") as f:
        st, w = f["batchai_training_state"].attrs, f["model_weights"]
        masks = [cifar_rng.dropout_masks(int(st["seed"]), int(st["epoch"]), 0, 1, rank)[2][0] for rank in (0, 1)]
        j = int(np.flatnonzero(~masks[0] & masks[1])[0])
        k1, b1, k2 = (w[n][()] for n in ("dense_1/dense_1/kernel:0", "dense_1/dense_1/bias:0", "dense_2/dense_2/kernel:0"))
        k1[:, j], b1[j], k2[j, 0] = 0, 1, 3e38
        w["dense_1/dense_1/kernel:0"][...], w["dense_1/dense_1/bias:0"][...], w["dense_2/dense_2/kernel:0"][...] = k1, b1, k2
        arrays = (w["%s/%s/%s" % (layer, layer, t)][()] for layer in LAYERS for t in ("kernel:0", "bias:0"))
        st["weights_sha256"] = np.bytes_(hashlib.sha256(b"".join(a.astype("<f4").tobytes() for a in arrays)).hexdigest())
    print("dense_1 unit %d: its dropout keeps it on rank 1 only" % j)


if __name__ == "__main__":
    main()
