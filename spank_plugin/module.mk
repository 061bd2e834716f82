# spank_plugin/: three parts.
#   jobfile/   the job-file library: parse, validate, site settings, translation into a plan and a batch
#              script. Pure C: it knows nothing of Slurm, and it is what the fuzzer and the goldens test.
#   .          the batchai-job command (batchai_job.c, plugstack.c, monitor.c, check_site.c).
#   spank/     the SPANK plugin, one file per context (spank_plugin/plugin.mk).
spank_plugin_CFLAGS := $(CJSON_CFLAGS) $(YAML_CFLAGS) -Ispank_plugin -Ispank_plugin/jobfile -Ispank_plugin/spank -Icommon -DBAI_VERSION='"$(VERSION)"'

JOBLIB_SRCS := $(addprefix spank_plugin/jobfile/,diag.c jsonv.c checks.c yamltree.c job.c azureml.c azureml_plan.c \
                                                 settings.c toolkits.c toolkit_steps.c plan.c steps.c translate.c \
                                                 render.c sbuf.c load.c pipeline.c sweep.c) \
              $(COMMON_SRCS)
BAIJOB_SRCS := spank_plugin/batchai_job.c spank_plugin/plugstack.c spank_plugin/monitor.c spank_plugin/check_site.c \
               spank_plugin/slurm_read.c spank_plugin/slurm_job.c spank_plugin/job_control.c spank_plugin/job_stop.c \
               spank_plugin/graph_file.c spank_plugin/pipeline_cmd.c spank_plugin/sweep_cmd.c spank_plugin/partition_fit.c \
               spank_plugin/spank/rootfs.c
JOBLIB     := $(BUILD)/lib/libbatchai-job.a
JOBLIB_SAN := $(BUILD)/san/lib/libbatchai-job.a

$(JOBLIB): $(call obj-of,$(JOBLIB_SRCS))
	@mkdir -p $(@D)
	$(Q)$(call quiet,AR)$(AR) rcs $@ $^
$(JOBLIB_SAN): $(call san-of,$(JOBLIB_SRCS))
	@mkdir -p $(@D)
	$(Q)$(call quiet,AR)$(AR) rcs $@ $^

$(BUILD)/bin/batchai-job: $(call obj-of,$(BAIJOB_SRCS)) $(JOBLIB)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(LDHARDEN) -o $@ $^ $(JOBLIB_LIBS) -lm
# The same command built with sanitizers: the golden tests run it.
$(BUILD)/san/bin/batchai-job: $(call san-of,$(BAIJOB_SRCS)) $(JOBLIB_SAN)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_FLAGS) -o $@ $^ $(JOBLIB_LIBS) -lm

# The job-file library reads JSON (cJSON) and YAML (libyaml): batchai-job, the plugin and the programs of
# their tests are built only where both are found. Their tests still count, and skip naming what is missing
# (BATCHAI_JOB_MISSING reaches them from make check; make config says it too).
JOBLIB_OK := $(and $(HAVE_CJSON),$(HAVE_YAML))
export BATCHAI_JOB_MISSING := $(strip $(if $(HAVE_CJSON),,$(dep_name_cjson) (libcjson-dev)) \
                                      $(if $(HAVE_YAML),,$(dep_name_yaml) (libyaml-dev)))
ifneq ($(JOBLIB_OK),)
ALL += $(BUILD)/bin/batchai-job
INSTALL_RULES += install-batchai-job
else
NOT_BUILT += batchai-job
not_built_why_batchai-job := it needs $(BATCHAI_JOB_MISSING)
endif

install-batchai-job: $(BUILD)/bin/batchai-job
	install -D -m 0755 $< $(DESTDIR)$(PREFIX)/bin/batchai-job
	$(call install-man,spank_plugin/batchai-job.1)
.PHONY: install-batchai-job

-include tests/jobfile/jobfile.mk
-include tests/spank/spank.mk
-include spank_plugin/plugin.mk
