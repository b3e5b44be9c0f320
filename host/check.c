/* check.c: the tolerance table of `fusec run --check` (docs/tolerances.md).
 *
 * A tolerance is a base per float dtype (about ten units in the last place of that
 * dtype) times a factor per op family: exact families (views, casts, selects,
 * joins, comparisons) get 0, plain arithmetic 1, transcendental math 4 (kernels use
 * short approximations), and everything that sums many terms 16 (reductions,
 * matmul, conv and pools, whose summation order differs). An output's tolerance is
 * that of the loosest op it depends on, since an error made early flows through
 * the rest. Integer and bool results must match exactly. Under --allow-tf32 an
 * output that depends on an f32 matmul is checked at least at tf32's tolerance. */
#include <stdlib.h>

#include "host.h"

static double dtype_base(DType t)
{
	switch (t) {
	case DT_F64: return 1e-12;
	case DT_F32: return 1e-5;
	case DT_F16: return 1e-2;
	case DT_BF16: return 8e-2;
	default: return 0;
	}
}

static double family_factor(OpFamily fam)
{
	switch (fam) {
	case FAM_BINARY: case FAM_SCALAR: return 1;
	case FAM_UNARY: return 4;
	case FAM_REDUCE: case FAM_MATMUL: case FAM_MODULE: return 16;
	default: return 0;
	}
}

Tolerance check_tolerance(DType dtype, OpFamily fam)
{
	double t = dtype_base(dtype) * family_factor(fam);
	return (Tolerance){t, t};
}

Tolerance check_tensor_tolerance(const Graph *g, int tensor, bool tf32)
{
	DType dt = g->tensors[tensor].dtype;
	double factor = 0, floor = 0;
	char *seen = xcalloc((size_t)g->ntensors + 1, 1);
	int *stack = xmalloc(((size_t)g->ntensors + 1) * sizeof *stack);
	int top = 0;
	stack[top++] = tensor;
	seen[tensor] = 1;
	while (top) {
		int p = g->tensors[stack[--top]].producer;
		if (p < 0)
			continue;
		const Op *op = &g->ops[p];
		double f = family_factor(ir_ops[op->kind].family);
		if (f > factor)
			factor = f;
		if (tf32 && op->kind == OP_MATMUL && g->tensors[op->in[0]].dtype == DT_F32)
			floor = CHECK_TF32_BASE * family_factor(FAM_MATMUL);
		for (int k = 0; k < op->nin; k++)
			if (!seen[op->in[k]]) {
				seen[op->in[k]] = 1;
				stack[top++] = op->in[k];
			}
	}
	free(seen);
	free(stack);
	double t = dtype_base(dt) * factor;
	if (dtype_base(dt) > 0 && floor > t)
		t = floor;
	return (Tolerance){t, t};
}
