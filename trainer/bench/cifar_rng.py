"""cifar-train's random draws in numpy, written from trainer/src/core/rng.h, draws.c, kernels.h (dropout_kept) and
model.c (model_init_params), so that another implementation can train with exactly the numbers cifar-train
uses (trainer/bench/torch_with_our_draws.py). tests/trainer/test_lockstep.py checks it against what
`cifar-train --dump-steps` exports, so it cannot drift from the C code unnoticed."""
import numpy as np

U = np.uint64
INIT, SHUFFLE, AUGMENT, DROPOUT = 1, 2, 3, 4  # enum rng_stream
GOLDEN = U(0x9e3779b97f4a7c15)
# (name, HWIO or (in, out) shape) of the model's kernels, in parameter order; each is followed by its bias
KERNELS = [("conv2d_1", (3, 3, 3, 32)), ("conv2d_2", (3, 3, 32, 32)), ("conv2d_3", (3, 3, 32, 64)),
           ("conv2d_4", (3, 3, 64, 64)), ("dense_1", (2304, 512)), ("dense_2", (512, 10))]
DROPOUTS = [((15, 15, 32), 0.25), ((6, 6, 64), 0.25), ((512,), 0.5)]  # per-image NHWC shape, rate


def mix(z):
    with np.errstate(over="ignore"):
        z = (z ^ (z >> U(30))) * U(0xbf58476d1ce4e5b9)
        z = (z ^ (z >> U(27))) * U(0x94d049bb133111eb)
    return z ^ (z >> U(31))


def key(seed, epoch, step, rank, stream):
    with np.errstate(over="ignore"):
        k = mix(np.array([seed], U) + GOLDEN)
    k = mix(k ^ U((epoch << 32) | step))
    return int(mix(k ^ U((rank << 32) | stream))[0])


M32 = U(0xffffffff)


def block(k, b):
    """rng_block: Philox4x32-10 of counters b (an array) under key k; four uint64 arrays holding 32-bit words."""
    b = np.asarray(b, U)
    c0, c1, c2, c3 = b & M32, b >> U(32), np.zeros_like(b), np.zeros_like(b)
    k0, k1 = U(k & 0xffffffff), U(k >> 32)
    with np.errstate(over="ignore"):
        for r in range(10):
            if r:
                k0, k1 = (k0 + U(0x9E3779B9)) & M32, (k1 + U(0xBB67AE85)) & M32
            p0, p1 = U(0xD2511F53) * c0, U(0xCD9E8D57) * c2
            c0, c1, c2, c3 = (p1 >> U(32)) ^ c1 ^ k0, p1 & M32, (p0 >> U(32)) ^ c3 ^ k1, p0 & M32
    return c0, c1, c2, c3


def u64(k, i):
    """rng_u64: words 2(i % 2) and 2(i % 2) + 1 of block i / 2, low word first."""
    i = np.asarray(i, U)
    w = block(k, i >> U(1))
    odd = (i & U(1)).astype(bool)
    return np.where(odd, w[2] | (w[3] << U(32)), w[0] | (w[1] << U(32)))


def uniform(k, i):
    return (u64(k, i) >> U(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def epoch_order(seed, epoch, n, rank=0):
    """draw_epoch_order: Fisher-Yates over 0..n-1."""
    k, order = key(seed, epoch, 0, rank, SHUFFLE), np.arange(n)
    r = (u64(k, np.arange(n, dtype=U)) >> U(32)).astype(object)  # exact integer products below
    for i in range(n - 1, 0, -1):
        j = int((r[i] * (i + 1)) >> 32)
        order[i], order[j] = order[j], order[i]
    return order


def augment(seed, epoch, step, batch, rank=0):
    """draw_augment: (shift rows, shift cols, flip) per image of a 32x32 batch."""
    u = uniform(key(seed, epoch, step, rank, AUGMENT), np.arange(3 * batch, dtype=U)).reshape(batch, 3)
    shift = (2 * u[:, :2] - 1) * np.float32(0.1 * 32)
    return shift[:, 0], shift[:, 1], u[:, 2] < 0.5


def dropout_masks(seed, epoch, step, batch, rank=0):
    """The three dropout layers' keep masks (0/1, per image NHWC), as dropout_kept with model_dropout_key."""
    k, out = key(seed, epoch, step, rank, DROPOUT), []
    for d, (shape, rate) in enumerate(DROPOUTS):
        lk, i = int(u64(k, [d])[0]), np.arange(batch * int(np.prod(shape)), dtype=U)
        draw = (u64(lk, i >> U(2)) >> ((i & U(3)) * U(16))) & U(0xffff)
        out.append((draw.astype(np.float32) >= np.float32(rate * 65536)).reshape((batch,) + shape))
    return out


def initial_kernels(seed):
    """model_init_params: glorot_uniform kernels (HWIO / in x out), in parameter order; biases are zero."""
    k, out = key(seed, 0, 0, 0, INIT), []
    for t, (_, shape) in enumerate(KERNELS):
        count = int(np.prod(shape))
        fan_in = count // shape[-1]
        limit = np.sqrt(6.0 / (fan_in + fan_in // shape[-2] * shape[-1]))
        u = uniform(int(u64(k, [2 * t])[0]), np.arange(count, dtype=U)).astype(np.float64)
        out.append(((2.0 * u - 1.0) * limit).astype(np.float32).reshape(shape))
    return out
