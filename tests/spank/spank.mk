# Unit tests of the SPANK plugin's Slurm-free parts (included from spank_plugin/module.mk, built with or
# without Slurm): root's file-system work under ASan and UBSan.
$(BUILD)/tests/test_rootfs: tests/spank/test_rootfs.c tests/check.h $(call san-of,spank_plugin/spank/rootfs.c)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_CFLAGS) -Ispank_plugin/spank -o $@ $(filter %.c %.o,$^)

TEST_BINS += $(BUILD)/tests/test_rootfs
TESTS += $(BUILD)/tests/test_rootfs
