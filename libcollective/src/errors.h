/* Leaf: the calling thread's last error, the MPI error text, and the names used in every message. */
#ifndef COLL_ERRORS_H
#define COLL_ERRORS_H

#include <stdint.h>

#include "collective.h" /* the statuses */

#define COLL_ERRLEN 512 /* every message buffer, the backends' included */

/* coll_fail formats the calling thread's last error (coll_last_error) and returns status. */
int coll_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void coll_set_error(const char *text);
/* Writes "libcollective: CALL failed: MPI's text for rc" into err (COLL_ERRLEN); returns COLL_ERR_BACKEND. */
int coll_mpi_error(char *err, const char *call, int rc);
const char *coll_dtype_name(int64_t dtype);
const char *coll_op_name(int64_t op);
const char *coll_kind_name(int64_t kind);

#endif
