# spank_plugin/: three parts, and the primitives two of them share.
#   jobfile/   the job-file library: parse, validate, site settings, translation into a plan and a batch
#              script. Pure C: it knows nothing of Slurm, and it is what the fuzzer and the goldens test.
#              Outside it, code includes only its public header, "jobfile/batchai_jobfile.h".
#   command/   the batchai-job command (spank_plugin/command/command.mk).
#   spank/     the SPANK plugin, one file per context, and batchai-plan (spank_plugin/plugin.mk).
#   node/      root's file-system work and running as the user, used by the plugin and the command.
# Every part includes another's headers by its folder ("node/rootfs.h"), through -Ispank_plugin; the
# library's own files alone see its internal headers (-Ispank_plugin/jobfile).
spank_plugin_CFLAGS := $(CJSON_CFLAGS) $(YAML_CFLAGS) -Ispank_plugin -Icommon -DBAI_VERSION='"$(VERSION)"'
spank_plugin/jobfile_CFLAGS := $(spank_plugin_CFLAGS) -Ispank_plugin/jobfile

JOBLIB_SRCS := $(addprefix spank_plugin/jobfile/,diag.c jsonv.c checks.c yamltree.c job.c azureml.c azureml_plan.c \
                                                 settings.c toolkits.c toolkit_steps.c plan.c steps.c translate.c \
                                                 render.c sbuf.c load.c pipeline.c sweep.c) \
              $(COMMON_SRCS)
JOBLIB     := $(BUILD)/lib/libbatchai-job.a
JOBLIB_SAN := $(BUILD)/san/lib/libbatchai-job.a

$(JOBLIB): $(call obj-of,$(JOBLIB_SRCS))
	@mkdir -p $(@D)
	$(Q)$(call quiet,AR)$(AR) rcs $@ $^
$(JOBLIB_SAN): $(call san-of,$(JOBLIB_SRCS))
	@mkdir -p $(@D)
	$(Q)$(call quiet,AR)$(AR) rcs $@ $^

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

include spank_plugin/command/command.mk
-include tests/jobfile/jobfile.mk
-include tests/spank/spank.mk
-include spank_plugin/plugin.mk
