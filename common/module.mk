# common/: the little that both the plugin (spank_plugin/) and the trainer (trainer/) use, so that neither
# reaches into the other's folder: SHA-256 (the job file's digest; data and checkpoint checksums), the
# 64-byte block buffering and padding it shares with the trainer's MD5, the loop that writes a whole
# buffer, mkdir -p, and the growable string (strbuf: the job file's scripts, the Keras files' JSON). Pure C, no
# dependency: the plugin that slurmd loads on every node links it without adding any.
# Users add -Icommon and take $(COMMON_SRCS)'s objects (release or sanitizer build) into what they link.
common_CFLAGS :=
COMMON_SRCS := $(addprefix common/,sha256.c hash_block.c write_all.c make_dirs.c strbuf.c)
# The checksums read whole datasets and checkpoints: -O3 for them, whoever links them.
$(call obj-of,$(COMMON_SRCS)): OPT := -O3 -g
