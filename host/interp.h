/* interp.h: the reference interpreter: runs a Graph op by op on the host.
 *
 * In:  a validated Graph and one HostTensor per graph input (in g->inputs order),
 *      each with the input's dtype and shape.
 * Out: one HostTensor per graph output (in g->outputs order), malloc'd; the caller
 *      frees each with host_free. Nothing is allocated on failure.
 * Every op computes in double (ints in int64) and stores its result rounded to its
 * output dtype, so intermediates hold what a real run would store. The semantics
 * chosen where torch and burn leave room are listed in host/interp.c.
 * The Graph is only read; it stays owned by its arena. */
#ifndef FUSEC_INTERP_H
#define FUSEC_INTERP_H

#include "host.h"

/* Check that t fits graph input number i (dtype and shape); fills *d if not. */
int interp_check_input(const Graph *g, int i, const HostTensor *t, Diag *d);
/* Returns 0, or -1 with *d set (a wrong input, or a runtime error such as a
 * gather index out of range). */
int interp_run(const Graph *g, const HostTensor *inputs, HostTensor *outputs, Diag *d);

#endif
