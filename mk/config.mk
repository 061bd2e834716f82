# Toolchain and dependency detection. Everything optional is detected here once,
# and `make config` (or any build) says what was found, as llm.c does.

BUILD   ?= build
# Install layout, named as distro packagers pass it (make install DESTDIR=/stage PREFIX=/usr LIBDIR=/usr/lib64):
# LIBDIR is where libraries and libcollective.pc go (/usr/lib64 on RHEL, /usr/lib/<multiarch> on Debian).
# Every install rule installs programs 0755 and shared objects 0644, as Debian policy and RHEL's rpmbuild
# (brp-elfperms) have them: the loader needs no x bit.
PREFIX  ?= /usr/local
DESTDIR ?=
LIBDIR  ?= $(PREFIX)/lib
MANDIR  ?= $(PREFIX)/share/man
VERSION := 0.1.0

CC      ?= cc
ifeq ($(origin CC),default)
CC      := gcc
endif
CSTD      := -std=c11 -D_GNU_SOURCE
WARN      := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes
HARDEN    := -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIC
OPT       ?= -O2 -g
CFLAGS    ?=
BASE_CFLAGS = $(CSTD) $(WARN) $(OPT) $(HARDEN) -MMD -MP $(CFLAGS)
LDHARDEN  := -Wl,-z,relro,-z,now -Wl,--as-needed

# Sanitizer flavour for test binaries (objects under $(BUILD)/san/).
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS = $(CSTD) $(WARN) -O1 -g -fPIC -MMD -MP $(SAN_FLAGS) $(CFLAGS)

pkgconf = $(shell pkg-config $(1) $(2) 2>/dev/null)

# Where a library without a .pc file lives: Debian's multiarch directory, /usr/lib/<triplet>, the triplet
# from the compiler (gcc -print-multiarch) or dpkg. Paths come from pkg-config first.
MULTIARCH := $(or $(shell $(CC) -print-multiarch 2>/dev/null),$(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null))
MULTIARCH_LIBDIR := /usr/lib$(if $(MULTIARCH),/$(MULTIARCH))

# cJSON (Debian: libcjson-dev)
CJSON_CFLAGS := $(or $(call pkgconf,--cflags,libcjson),-I/usr/include/cjson)
CJSON_LIBS   := $(or $(call pkgconf,--libs,libcjson),-lcjson)

# libyaml (Debian: libyaml-dev): Azure ML command jobs. The job-file library links both parsers.
YAML_CFLAGS := $(call pkgconf,--cflags,yaml-0.1)
YAML_LIBS   := $(or $(call pkgconf,--libs,yaml-0.1),-lyaml)
JOBLIB_LIBS  = $(CJSON_LIBS) $(YAML_LIBS)

# Slurm headers (Debian: libslurm-dev; RHEL: slurm-devel). A Slurm installed elsewhere is found through its
# slurm.pc (PKG_CONFIG_PATH=/opt/slurm/lib/pkgconfig), which also gives SLURM_PLUGIN_DIR below; the plugin
# accepts the Slurm releases spank_plugin/spank/spank_slurm.h names.
SLURM_INCLUDE ?= $(or $(call pkgconf,--variable=includedir,slurm),/usr/include)
HAVE_SLURM := $(if $(wildcard $(SLURM_INCLUDE)/slurm/spank.h),1,)
SLURM_PLUGIN_DIR ?= $(or $(shell pkg-config --variable=libdir slurm 2>/dev/null | sed 's,$$,/slurm,'),$(MULTIARCH_LIBDIR)/slurm-wlm)

# MPI (Debian: libopenmpi-dev)
MPICC := $(shell command -v mpicc 2>/dev/null)
HAVE_MPI := $(if $(MPICC),1,)
MPI_CFLAGS := $(if $(MPICC),$(shell $(MPICC) --showme:compile 2>/dev/null))
MPI_LIBS   := $(if $(MPICC),$(shell $(MPICC) --showme:link 2>/dev/null))
MPIRUN ?= mpirun

# HDF5 (Debian: libhdf5-dev, serial flavour)
HDF5_CFLAGS := $(or $(call pkgconf,--cflags,hdf5),-I/usr/include/hdf5/serial)
HDF5_LIBS   := $(or $(call pkgconf,--libs,hdf5),-L$(MULTIARCH_LIBDIR)/hdf5/serial -lhdf5)
HAVE_HDF5 := $(if $(wildcard $(patsubst -I%,%,$(filter -I%,$(HDF5_CFLAGS)))/hdf5.h /usr/include/hdf5.h),1,)

# BLAS (Debian: libopenblas-dev)
BLAS_CFLAGS := $(call pkgconf,--cflags,openblas)
BLAS_LIBS   := $(or $(call pkgconf,--libs,openblas),-lopenblas)

# CUDA toolkit, cuBLAS and NCCL (in /usr/local/cuda on these machines)
CUDA_HOME ?= /usr/local/cuda
NVCC := $(wildcard $(CUDA_HOME)/bin/nvcc)
HAVE_CUDA := $(if $(NVCC),1,)
HAVE_NCCL := $(if $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h),$(HAVE_CUDA),)
HAVE_CUDNN := $(if $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h),$(HAVE_CUDA),)
CUDA_CFLAGS := -I$(CUDA_HOME)/include
CUDA_LIBS   := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart
NCCL_LIBS   := -L$(CUDA_HOME)/lib64 -lnccl
NVCC_FLAGS  ?= -O3 -std=c++17 -arch=sm_90 -Xcompiler -fPIC

# libFuzzer needs clang.
CLANG := $(shell command -v clang 2>/dev/null)

# What was found, one row per dependency: name, found (non-empty) and where to get it. `make config` prints
# the table; every build prints one line of it. A part whose dependency is missing is not built, and its
# tests report SKIP(dep) (tests/run-tests), so they never vanish from the count.
HAVE_CJSON := $(if $(wildcard $(patsubst -I%,%,$(filter -I%,$(CJSON_CFLAGS)))/cJSON.h /usr/include/cjson/cJSON.h),1,)
HAVE_YAML  := $(if $(wildcard /usr/include/yaml.h $(patsubst -I%,%,$(filter -I%,$(YAML_CFLAGS)))/yaml.h),1,)
# libseccomp (Debian: libseccomp-dev): the job file's parser confines itself with it (spank/batchai_plan.c).
HAVE_SECCOMP := $(if $(wildcard /usr/include/seccomp.h),1,)
SECCOMP_LIBS := $(or $(call pkgconf,--libs,libseccomp),-lseccomp)
HAVE_DNNL  := $(if $(wildcard /usr/include/dnnl.h /usr/include/oneapi/dnnl/dnnl.h),1,)
HAVE_BLAS  := $(if $(shell pkg-config --exists openblas 2>/dev/null && echo 1)$(wildcard /usr/include/*/openblas-pthread/cblas.h),1,)
# clang names its runtimes by the target's CPU, the triplet's first word (x86_64, aarch64).
HAVE_FUZZ  := $(if $(CLANG),$(if $(wildcard /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-$(firstword $(subst -, ,$(or $(MULTIARCH),$(shell uname -m)))).a),1,),)
DEPS := slurm mpi cjson yaml seccomp hdf5 dnnl blas cuda nccl cudnn fuzz
dep_name_slurm := Slurm headers (spank.h)
dep_have_slurm := $(HAVE_SLURM)
dep_pkg_slurm  := libslurm-dev; the plugin, the cluster tests
dep_name_mpi   := Open MPI
dep_have_mpi   := $(HAVE_MPI)
dep_pkg_mpi    := libopenmpi-dev openmpi-bin; libcollective, cifar-train
dep_name_cjson := cJSON
dep_have_cjson := $(HAVE_CJSON)
dep_pkg_cjson  := libcjson-dev; batchai-job, the plugin
dep_name_yaml  := libyaml
dep_have_yaml  := $(HAVE_YAML)
dep_pkg_yaml   := libyaml-dev; batchai-job, the plugin (Azure ML command jobs)
dep_name_seccomp := libseccomp
dep_have_seccomp := $(HAVE_SECCOMP)
dep_pkg_seccomp  := libseccomp-dev; the plugin's job-file parser (seccomp confinement)
dep_name_hdf5  := HDF5
dep_have_hdf5  := $(HAVE_HDF5)
dep_pkg_hdf5   := libhdf5-dev; cifar-train
dep_name_dnnl  := oneDNN
dep_have_dnnl  := $(HAVE_DNNL)
dep_pkg_dnnl   := libdnnl-dev; cifar-train (convolutions)
dep_name_blas  := OpenBLAS
dep_have_blas  := $(HAVE_BLAS)
dep_pkg_blas   := libopenblas-dev; cifar-train (dense layers)
dep_name_cuda  := CUDA toolkit ($(CUDA_HOME))
dep_have_cuda  := $(HAVE_CUDA)
dep_pkg_cuda   := the NVIDIA CUDA toolkit; the GPU table of cifar-train
dep_name_nccl  := NCCL
dep_have_nccl  := $(HAVE_NCCL)
dep_pkg_nccl   := libnccl-dev (NVIDIA); the device backend of libcollective
dep_name_cudnn := cuDNN
dep_have_cudnn := $(HAVE_CUDNN)
dep_pkg_cudnn  := nvidia-cudnn; the per-layer cuDNN benchmark
dep_name_fuzz  := clang with libFuzzer
dep_have_fuzz  := $(HAVE_FUZZ)
dep_pkg_fuzz   := clang libclang-rt-dev; the job-file fuzzer

found = $(if $(1),yes,no)
ifeq ($(filter clean deps help check demo demo-shell demo-stop config,$(MAKECMDGOALS)),)
$(info config: $(foreach d,$(DEPS),$(d) $(call found,$(dep_have_$(d)))) (make config: what each is for))
endif
