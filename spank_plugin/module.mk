# spank_plugin/: the job-file library (parse, validate, site settings, translation), the batchai-job
# command, and the SPANK plugin (spank_plugin/plugin.mk).
spank_plugin_CFLAGS := $(CJSON_CFLAGS) -Ispank_plugin

JOBLIB_SRCS := spank_plugin/diag.c spank_plugin/job.c spank_plugin/settings.c spank_plugin/translate.c

-include spank_plugin/plugin.mk
