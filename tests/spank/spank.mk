# Unit tests of the SPANK plugin's Slurm-free parts (included from spank_plugin/module.mk, built with or
# without Slurm), under ASan and UBSan: root's file-system work, and running as the user and waiting.
$(BUILD)/tests/test_rootfs: tests/spank/test_rootfs.c tests/check.h $(call san-of,spank_plugin/node/rootfs.c common/write_all.c)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_CFLAGS) -Ispank_plugin -Icommon -o $@ $(filter %.c %.o,$^)

TEST_BINS += $(BUILD)/tests/test_rootfs
TESTS += $(BUILD)/tests/test_rootfs

$(BUILD)/tests/test_as_user: tests/spank/test_as_user.c tests/check.h $(call san-of,spank_plugin/node/as_user.c) $(JOBLIB_SAN)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_CFLAGS) -Ispank_plugin -Icommon -o $@ $(filter %.c %.o %.a,$^) \
	    $(JOBLIB_LIBS) -lm

TEST_BINS += $(if $(JOBLIB_OK),$(BUILD)/tests/test_as_user)
TESTS += $(BUILD)/tests/test_as_user

# The plan's wire format and root's hold on a plan (spank/plan_wire.c, spank/plan_child.c).
$(BUILD)/tests/test_plan_wire: tests/spank/test_plan_wire.c tests/check.h \
    $(call san-of,spank_plugin/spank/plan_wire.c spank_plugin/spank/plan_child.c spank_plugin/node/as_user.c \
                  spank_plugin/node/rootfs.c) $(JOBLIB_SAN)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_CFLAGS) -Ispank_plugin -Ispank_plugin/spank -Icommon -o $@ $(filter %.c %.o %.a,$^) \
	    $(JOBLIB_LIBS) -lm -ldl

# libFuzzer target over the plan's wire reader (clang only).
FUZZ_PLAN := $(BUILD)/fuzz/fuzz_plan_wire
$(FUZZ_PLAN): tests/spank/fuzz_plan_wire.c spank_plugin/spank/plan_wire.c $(JOBLIB_SRCS)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)clang $(CSTD) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	    -Ispank_plugin -Ispank_plugin/spank -Icommon $(CJSON_CFLAGS) -o $@ $(filter %.c,$^) $(JOBLIB_LIBS) -lm

TEST_BINS += $(if $(JOBLIB_OK),$(BUILD)/tests/test_plan_wire $(if $(CLANG),$(FUZZ_PLAN)))
TESTS += $(BUILD)/tests/test_plan_wire tests/spank/test_fuzz_plan.sh
