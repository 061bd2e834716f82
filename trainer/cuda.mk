# trainer/cuda.mk: the trainer's CUDA table (trainer/src/cuda/kernels_cuda.cu: cuBLAS + the project's kernels),
# included at the end of trainer/module.mk. Active where mk/config.mk found nvcc (HAVE_CUDA) and cuBLAS's
# header is there; elsewhere cifar-train builds exactly as before and `--device cuda` says it was built
# without CUDA.
#   build/lib/libcifar_train_cuda.so        the table, with libcudart and libcublas (rpath); cifar-train
#                                           loads it on demand (trainer/src/cuda/cuda_plugin.c)
#   build/tests/trainer/cuda_check          GPU kernels, layers and a full step against the CPU table
#                                           (built by `make check` so CI proves it compiles; it reports
#                                           "SKIP(gpu): ..." only where the machine has no GPU)
# tests/trainer/test_cuda*.sh are registered with the other test_*.sh scripts by module.mk.
# NVCC_FLAGS (mk/config.mk) compiles for sm_90 (H100/H200) plus compute_90 PTX, which the driver JIT-compiles
# for newer GPUs; for older ones build with e.g. NVCC_FLAGS='-O3 -std=c++17 -arch=sm_80 -Xcompiler -fPIC'.

HAVE_CUBLAS := $(if $(wildcard $(CUDA_HOME)/include/cublas_v2.h),$(HAVE_CUDA),)
TRAINER_CUDA := $(and $(HAVE_CUBLAS),$(TRAINER_RUN_OK))

ifeq ($(filter clean deps help check demo demo-stop config,$(MAKECMDGOALS)),)
$(info config: trainer CUDA table $(if $(TRAINER_CUDA),yes ($(NVCC) $(NVCC_FLAGS); cuBLAS, libcudart in $(CUDA_HOME)/lib64),no ($(if $(HAVE_CUDA),no cuBLAS header,no nvcc) in $(CUDA_HOME)): cifar-train is CPU-only))
endif

BENCHES += trainer/bench/trainer-gpu-bench.sh

ifneq ($(TRAINER_CUDA),)
TRAINER_CUDA_OBJ := $(BUILD)/obj/trainer/src/cuda/kernels_cuda.o
# The .cu is C++ (runtime support from libstdc++); the runtime is the shared libcudart, the one the NCCL
# plugin of libcollective also loads, so both see the same device selection.
TRAINER_CUDA_LIBS := $(CUDA_LIBS) -lcublas -lstdc++
NVCC_WARN := -Xcompiler -Wall,-Wextra --Werror all-warnings

$(TRAINER_CUDA_OBJ): trainer/src/cuda/kernels_cuda.cu
	@mkdir -p $(@D)
	$(Q)$(call quiet,NVCC)$(NVCC) $(NVCC_FLAGS) $(NVCC_WARN) -Itrainer/src -MMD -MP -MF $(@:.o=.d) -c $< -o $@

# The table is a library cifar-train loads on demand (trainer/src/cuda/cuda_plugin.c), so the same binary runs
# on nodes without CUDA.
TRAINER_CUDA_SO := $(BUILD)/lib/libcifar_train_cuda.so
$(TRAINER_CUDA_SO): $(TRAINER_CUDA_OBJ)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) -shared $(LDHARDEN) -o $@ $^ $(TRAINER_CUDA_LIBS)
ALL += $(TRAINER_CUDA_SO)

# cifar-train looks for it in ../lib beside itself, then on the loader's path, which holds a distro's LIBDIR.
install-trainer-cuda: $(TRAINER_CUDA_SO)
	install -D -m 0644 $(TRAINER_CUDA_SO) $(DESTDIR)$(LIBDIR)/libcifar_train_cuda.so
INSTALL_RULES += install-trainer-cuda
.PHONY: install-trainer-cuda

# The GPU check links the release objects: AddressSanitizer's shadow memory collides with the CUDA
# driver's address-space reservations, and compute-sanitizer (run by tests/trainer/test_cuda.sh where it
# exists) is the tool that checks device memory.
CUDA_CHECK := $(BUILD)/tests/trainer/cuda_check
$(CUDA_CHECK): $(call obj-of,tests/trainer/cuda_check.c $(TRAINER_SRCS)) $(TRAINER_CUDA_OBJ) $(LIBCOLLECTIVE_A)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(LDHARDEN) -o $@ $(filter %.o,$^) $(TRAINER_MPI_LDLIBS) $(TRAINER_CUDA_LIBS)

TEST_BINS += $(CUDA_CHECK)

# `make bench-gpu` (trainer/bench/gpu-vs-torch.sh): the GPU step and end-to-end training timed like the PyTorch
# peer; like cifar-train it loads the CUDA table on demand, so it links no CUDA itself.
TRAINER_GPU_BENCH := $(BUILD)/bin/trainer-gpu-bench
$(call obj-of,trainer/bench/trainer_gpu_bench.c): OPT := -O3 -g
$(TRAINER_GPU_BENCH): $(call obj-of,trainer/bench/trainer_gpu_bench.c $(TRAINER_SRCS)) $(LIBCOLLECTIVE_A)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(LDHARDEN) -o $@ $(filter %.o,$^) $(TRAINER_MPI_LDLIBS)
ALL += $(TRAINER_GPU_BENCH)

# `make bench-gpu` also times each convolution layer with the table's im2col + SGEMM against cuDNN
# (trainer/bench/conv_cudnn_bench.c), where cuDNN's header and library are both found.
HAVE_LIBCUDNN := $(if $(wildcard $(CUDA_HOME)/lib64/libcudnn.so $(MULTIARCH_LIBDIR)/libcudnn.so),$(HAVE_CUDNN),)
ifneq ($(HAVE_LIBCUDNN),)
CONV_CUDNN_BENCH := $(BUILD)/bin/conv-cudnn-bench
$(call obj-of,trainer/bench/conv_cudnn_bench.c): trainer_CFLAGS += -isystem $(CUDA_HOME)/include
$(CONV_CUDNN_BENCH): $(call obj-of,trainer/bench/conv_cudnn_bench.c $(TRAINER_SRCS)) $(TRAINER_CUDA_OBJ) $(LIBCOLLECTIVE_A)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(LDHARDEN) -o $@ $(filter %.o,$^) $(TRAINER_MPI_LDLIBS) $(TRAINER_CUDA_LIBS) -lcudnn
ALL += $(CONV_CUDNN_BENCH)
endif
endif

.PHONY: bench-gpu
bench-gpu: all
	@BUILD=$(BUILD) trainer/bench/gpu-vs-torch.sh
