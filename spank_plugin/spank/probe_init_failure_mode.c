/* Build probe, never linked (plugin.mk compiles it with -fsyntax-only against the site's Slurm headers):
 * it compiles only where spank.h declares slurm_spank_init_failure_mode and slurm_errno.h ESPANK_NODE_FAILURE,
 * as from Slurm 25.05. spank_slurm.h says what the plugin does with it. */
#include <slurm/spank.h>

int *bai_probe_mode = &slurm_spank_init_failure_mode;
int bai_probe_node = ESPANK_NODE_FAILURE;
