# Tests of the job-file library and batchai-job (included from spank_plugin/module.mk). They test the
# library's internals, so they alone outside it see its internal headers (-Ispank_plugin/jobfile); the
# benchmark and settings-doc, which are not tests, see its public header alone, as the command does.
tests_jobfile_INC := $(CJSON_CFLAGS) -Ispank_plugin -Ispank_plugin/jobfile -Icommon

$(BUILD)/tests/test_jobfile_unit: tests/jobfile/test_jobfile_unit.c tests/check.h $(JOBLIB_SAN)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_CFLAGS) $(tests_jobfile_INC) -o $@ $(filter %.c %.o %.a,$^) $(JOBLIB_LIBS) -lm

# The toolkit table against schemas/job.schema.json.
$(BUILD)/tests/test_toolkit_schema: tests/jobfile/test_toolkit_schema.c tests/check.h $(JOBLIB_SAN)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_CFLAGS) $(tests_jobfile_INC) -o $@ $(filter %.c %.o %.a,$^) $(JOBLIB_LIBS) -lm

# Writes the hostile job files (about 1 MiB each) that the golden test and the benchmark read.
$(BUILD)/tests/gen_hostile: tests/jobfile/gen_hostile.c
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_CFLAGS) $(tests_jobfile_INC) -o $@ $<

# libFuzzer target over bai_job_parse + bai_translate + bai_render_script (clang only).
FUZZ_JOB := $(BUILD)/fuzz/fuzz_job
$(FUZZ_JOB): tests/jobfile/fuzz_job.c $(JOBLIB_SRCS)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)clang $(CSTD) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $(tests_jobfile_INC) \
	    -o $@ $(filter %.c %.o %.a,$^) $(JOBLIB_LIBS) -lm

$(BUILD)/bench/bench_validate: spank_plugin/bench/bench_validate.c $(JOBLIB)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(BASE_CFLAGS) $(spank_plugin_CFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(JOBLIB_LIBS) -lm

# Prints the settings section of spank_batchai(8) (or a markdown table) from the settings table.
$(BUILD)/tools/settings-doc: spank_plugin/command/settings_doc.c $(JOBLIB_SAN)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_CFLAGS) $(spank_plugin_CFLAGS) -o $@ $(filter %.c %.o %.a,$^) $(JOBLIB_LIBS) -lm

ifneq ($(JOBLIB_OK),)
TEST_BINS += $(BUILD)/tests/test_jobfile_unit $(BUILD)/tests/test_toolkit_schema $(BUILD)/tests/gen_hostile $(BUILD)/san/bin/batchai-job \
             $(BUILD)/bench/bench_validate $(BUILD)/tools/settings-doc \
             $(if $(CLANG),$(FUZZ_JOB))
endif
TESTS += $(BUILD)/tests/test_jobfile_unit $(BUILD)/tests/test_toolkit_schema tests/jobfile/test_golden.sh tests/jobfile/test_fuzz.sh \
         tests/jobfile/test_pipeline_basics.sh \
         tests/jobfile/test_prep_check.sh tests/jobfile/test_settings_doc.sh \
         tests/jobfile/test_site_lookup.sh tests/jobfile/test_validate_all.sh tests/jobfile/test_recipes_user_shares.sh
BENCHES += spank_plugin/bench/bench_validate.sh

# make fuzz: a long fuzzing run (FUZZ_SECONDS, default 600) from the corpus of job files.
FUZZ_SECONDS ?= 600
fuzz: $(FUZZ_JOB)
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/jobfile/test_fuzz.sh

# make golden: regenerate the golden files after an intended change (review the diff!).
golden: $(BUILD)/san/bin/batchai-job
	UPDATE_GOLDEN=1 tests/jobfile/test_golden.sh

# make settings-doc: rewrite the settings section of the manual page after a change to the table.
settings-doc: $(BUILD)/tools/settings-doc
	UPDATE_DOCS=1 tests/jobfile/test_settings_doc.sh
.PHONY: fuzz golden settings-doc
