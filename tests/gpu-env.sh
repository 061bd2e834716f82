# Sourced by the GPU tests: whether this machine has an NVIDIA GPU at all, decided without CUDA.
# A GPU test skips (exit 77, "SKIP(gpu): ...") only when gpu_absent says so: no /dev/nvidia* node and no GPU
# in `nvidia-smi -L`. Where a device is present, every failure after that (the CUDA runtime cannot see it,
# a driver/runtime mismatch, a library that does not load, a part that was not built) is a FAIL: asking
# CUDA whether there is a device cannot tell "none" from "broken", so the tests do not ask it.
gpu_absent() {
    ! compgen -G '/dev/nvidia*' >/dev/null && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'
}
# What the machine shows, for messages.
gpu_seen() {
    echo "$(compgen -G '/dev/nvidia*' | tr '\n' ' ')$(nvidia-smi -L 2>/dev/null | head -n 2 | tr '\n' ' ')"
}
