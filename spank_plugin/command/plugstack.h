/* The site settings of this host's plugin, found the way Slurm finds them, so that batchai-job answers as
 * sbatch here would.
 *
 * slurm.conf is $SLURM_CONF, else BAI_SLURM_CONF (Debian's /etc/slurm/slurm.conf); its PlugStackConfig
 * (the last one, following `Include` lines, whose relative paths are beside slurm.conf, as in Slurm's
 * parse_config.c) names the plugin stack, else plugstack.conf beside slurm.conf.
 * In the stack, as Slurm reads it (src/common/spank.c): '#' starts a comment, a line is `required` or
 * `optional`, a plugin path and its arguments, or `include PATTERN` (glob(3), relative to the including
 * file's directory). The first line whose plugin's file name is spank_batchai.so gives the settings; a
 * missing file is an empty one, as for Slurm. */
#ifndef BAI_PLUGSTACK_H
#define BAI_PLUGSTACK_H

#include <stddef.h>

#include "jobfile/batchai_jobfile.h"

#ifndef BAI_SLURM_CONF
#define BAI_SLURM_CONF "/etc/slurm/slurm.conf"
#endif
#define BAI_PLUGIN_FILE "spank_batchai.so"

/* Apply the plugin line's words to `site` (initialised by the caller), as the plugin does. `origin` gets a
 * sentence saying where the settings came from ("the spank_batchai.so line of /etc/slurm/plugstack.conf:3",
 * or why they are the defaults). Returns 0, or -1 with the bad words in diag. */
int bai_site_from_slurm(struct bai_settings *site, char *origin, size_t size, struct bai_diag *diag);

#endif
