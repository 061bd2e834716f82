# gpukit/: `make gpu-kit`, everything a lent GPU machine needs to run the project's GPU checks in one go,
# built here (docs/gpu-kit.md).
#   build/gpu-kit/           the kit: run-gpu-checks at its top, the programs, the CUDA table (sm_90 + PTX),
#                            the GPU tests, the PyTorch peers, the CIFAR subset, and every library the
#                            programs load that a bare GPU machine lacks (gpukit/make-kit says how)
#   build/gpu-kit.tar.xz     the same, compressed: what travels to the GPU machine
# It needs the CUDA table, the NCCL plugin and conv-cudnn-bench (nvcc, cuBLAS, NCCL and cuDNN here) and the
# CIFAR subset; make-kit names what is missing. tests/gpukit/test_clean_root.sh builds a kit the same way,
# unpacks it in a root holding only glibc, a shell and the basic tools, and runs run-gpu-checks there.
GPU_KIT_DATA ?= ../shared/data/cifar-10-batches-bin-subset

.PHONY: gpu-kit
gpu-kit: all $(BUILD)/tests/trainer/cuda_check $(BUILD)/tests/collective/test_faults $(BUILD)/tests/collective/test_collective
	$(Q)$(call quiet,KIT)CUDA_HOME=$(CUDA_HOME) gpukit/make-kit $(BUILD) $(GPU_KIT_DATA) $(BUILD)/gpu-kit

TESTS += tests/gpukit/test_clean_root.sh
