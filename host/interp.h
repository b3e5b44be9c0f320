/* interp.h: the reference interpreter: runs a Graph op by op on the host.
 *
 * In:  a validated Graph and one HostTensor per graph input (in g->inputs order),
 *      each with the input's dtype and shape.
 * Out: one HostTensor per graph output (in g->outputs order), malloc'd; the caller
 *      frees each with host_free. Nothing is allocated on failure.
 * Every op computes in double (ints in int64) and stores its result rounded to its
 * output dtype, so intermediates hold what a real run would store. The semantics
 * chosen where torch and burn leave room are listed in host/interp.c.
 * With interp_run_bounds each value also carries an error bound, propagated op by
 * op (host/bounds.c, the model of docs/tolerances.md).
 * The Graph is only read; it stays owned by its arena. */
#ifndef FUSEC_INTERP_H
#define FUSEC_INTERP_H

#include "host.h"

/* Check that t fits graph input number i (dtype and shape); fills *d if not. */
int interp_check_input(const Graph *g, int i, const HostTensor *t, Diag *d);
/* Returns 0, or -1 with *d set (a wrong input, or a runtime error such as a
 * gather index out of range). */
int interp_run(const Graph *g, const HostTensor *inputs, HostTensor *outputs, Diag *d);
/* interp_run, and beside each output its error bound (docs/tolerances.md): bounds
 * gets one f64 tensor per output, of the output's shape, holding for each element
 * how far a correct kernel's result may lie from the reference value (+inf: not
 * bounded). The caller frees them with host_free; nothing is allocated on failure. */
int interp_run_bounds(const Graph *g, const HostTensor *inputs, HostTensor *outputs,
		      HostTensor *bounds, Diag *d);
/* The same, for kernels run with --allow-tf32 when tf32 is INTERP_TF32: an f32
 * matmul's operands count as rounded to tf32 (relative error 2^-11 each); with
 * --allow-3xtf32 when it is INTERP_3XTF32: its products as three tf32 ones, summed
 * truncated within a stage (docs/tolerances.md); INTERP_F32 (0): f32's bounds. */
enum { INTERP_F32, INTERP_TF32, INTERP_3XTF32 };
int interp_run_bounds_tf32(const Graph *g, const HostTensor *inputs, HostTensor *outputs,
			   HostTensor *bounds, int tf32, Diag *d);
/* The check of a graph converted by `--precision` (passes/passes.h): g computes in
 * f32 what the kernels compute in store[t] (the shadow graph), so the values are
 * the original f32 graph's and each bound covers the kernels' roundings to
 * store[t], converted constants (inputs whose store differs) included
 * (docs/tolerances.md, "Reduced precision"). */
int interp_run_bounds_stored(const Graph *g, const DType *store, const HostTensor *inputs,
			     HostTensor *outputs, HostTensor *bounds, int tf32, Diag *d);

/* The bytes of a tensor of t's shape in dtype (UINT64_MAX when they overflow). */
uint64_t interp_tensor_bytes(const Tensor *t, DType dtype);
/* The most memory interp_run (bounds false) or interp_run_bounds (true: an f64
 * bound per element beside each value, and the bound's tight part beside those
 * made from f16/bf16 values) holds at
 * once, its own copies of the inputs and the outputs it hands back included; not
 * the caller's inputs. Saturates at UINT64_MAX. */
uint64_t interp_peak_bytes(const Graph *g, bool bounds);

#endif
