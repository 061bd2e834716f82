/* Backend: device memory, through the NCCL plugin (nccl_plugin.h) that device.c loads. */
#ifndef COLL_DEVICE_H
#define COLL_DEVICE_H

#include "nccl_plugin.h"

/* coll_init, after rank, size and local rank are known: loads the plugin when a device is asked for and
 * sets coll_world.device. */
int coll_device_open(void);
void coll_device_close(void);
/* The loaded plugin, NULL when coll_init was given no device. */
const struct coll_nccl_plugin *coll_device_plugin(void);
int coll_is_device_ptr(const void *p);

#endif
