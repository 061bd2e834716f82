# spank_plugin/command/command.mk: the batchai-job command, its install rule and its man page. Included by
# spank_plugin/module.mk, which builds the job-file library it links and says whether it can be built.
BAIJOB_SRCS := $(addprefix spank_plugin/command/,batchai_job.c plugstack.c monitor.c check_site.c slurm_read.c \
                                                 slurm_job.c job_control.c job_stop.c graph_file.c pipeline_cmd.c \
                                                 sweep_cmd.c partition_fit.c) \
               spank_plugin/node/rootfs.c

$(BUILD)/bin/batchai-job: $(call obj-of,$(BAIJOB_SRCS)) $(JOBLIB)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(LDHARDEN) -o $@ $^ $(JOBLIB_LIBS) -lm
# The same command built with sanitizers: the golden tests run it.
$(BUILD)/san/bin/batchai-job: $(call san-of,$(BAIJOB_SRCS)) $(JOBLIB_SAN)
	@mkdir -p $(@D)
	$(Q)$(call quiet,LD)$(CC) $(SAN_FLAGS) -o $@ $^ $(JOBLIB_LIBS) -lm

install-batchai-job: $(BUILD)/bin/batchai-job
	install -D -m 0755 $< $(DESTDIR)$(PREFIX)/bin/batchai-job
	$(call install-man,spank_plugin/command/batchai-job.1)
.PHONY: install-batchai-job

