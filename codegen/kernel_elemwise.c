/* kernel_elemwise.c: the elementwise family: binary, scalar, unary, compare, select
 * and cast ops, the views, and the vector path of all-elementwise kernels.
 *
 * An elementwise op maps its output index to each operand by broadcasting (a size-1
 * dim reads position 0) and applies values.c's arithmetic or math.c's functions. A
 * view maps the index by its own arithmetic (reshape, permute, swap_dims, expand,
 * slice) and evaluates its input there.
 *
 * When every op is elementwise and every global tensor has exactly the iteration shape,
 * the kernel gets a vector path: all buffers 16-byte aligned (checked at run time),
 * each thread takes V = 16 / (widest element) consecutive elements per step, loads and
 * stores them as one 16-byte (or narrower, for narrower dtypes) access, and a scalar
 * loop finishes the tail. The launch rule then asks for ceil(n / V) threads. */
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"

LLVMValueRef cg_eval_elementwise(CgKb *kb, const RelOp *op, CgIdx *out)
{
	OpKind k = (OpKind)op->kind;
	const RelTensor *res = &op->t[op->nin];
	LLVMValueRef v[3] = {0};
	for (int i = 0; i < op->nin && i < 3; i++) {
		CgIdx x = cg_idx_broadcast(kb, out, &op->t[i]);
		v[i] = cg_eval(kb, op->t[i].id, &x);
	}
	DType t = (DType)op->t[0].dtype;
	switch (ir_ops[k].family) {
	case FAM_BINARY:
		/* softmax's e / sum, a norm's d / sd: one reciprocal a row */
		if (k == OP_DIV && ir_dtype_is_float(t) && cg_row_uniform(kb, &op->t[1]) &&
		    !cg_row_uniform(kb, res))
			return cg_div_uniform(kb, v[0], v[1]);
		return cg_binary_value(kb, k, t, v[0], v[1]);
	case FAM_SCALAR:
		switch (k) {
		case OP_CLAMP: {
			LLVMValueRef lo = cg_scalar_as(kb, op->place0, t);
			LLVMValueRef hi = cg_scalar_as(kb, op->place0 + 1, t);
			return cg_select_max(kb, t, cg_select_max(kb, t, v[0], lo, true), hi, false);
		}
		default:
			return cg_binary_value(kb, k, t, v[0], cg_scalar_as(kb, op->place0, t));
		}
	case FAM_COMPARE:
		if (op->nin == 1)
			return cg_compare(kb, k, t, v[0], cg_scalar_as(kb, op->place0, t));
		return cg_compare(kb, k, t, v[0], v[1]);
	case FAM_UNARY:
		if (k == OP_NOT)
			return LLVMBuildNot(kb->b, v[0], "");
		if (k == OP_EXP && (res->dtype == DT_F16 || res->dtype == DT_BF16))
			return cg_math_exp_half(&kb->math, v[0]);
		if (k == OP_GELU && op->attr.approx == GELU_NONE &&
		    (res->dtype == DT_F16 || res->dtype == DT_BF16))
			return cg_math_gelu_half(&kb->math, v[0]);
		if ((k == OP_SIGMOID || k == OP_SILU || (k == OP_GELU && op->attr.approx == GELU_TANH)) &&
		    (res->dtype == DT_F16 || res->dtype == DT_BF16))
			return cg_math_act_half(&kb->math, k, v[0]);
		if (ir_dtype_is_float(t))
			return cg_math_unary(&kb->math, k, v[0], (GeluApprox)op->attr.approx);
		return cg_int_unary(kb, k, t, v[0]);
	case FAM_SELECT:
		if (k == OP_WHERE)
			return LLVMBuildSelect(kb->b, v[0], v[1], v[2], "");
		return LLVMBuildSelect(kb->b, v[1], cg_scalar_as(kb, op->place0, t), v[0], "");
	case FAM_CAST:
		return cg_convert(kb, v[0], t, (DType)res->dtype);
	default:
		die("not elementwise: %s", ir_ops[k].file);
	}
}

LLVMValueRef cg_eval_view(CgKb *kb, const RelOp *op, CgIdx *out)
{
	const RelTensor *in = &op->t[0];
	CgIdx x;
	switch ((OpKind)op->kind) {
	case OP_RESHAPE:
		if (cg_same_shape(out->rank, out->shape, in->rank, in->shape)) {
			x = *out;
			x.shape = in->shape;
		} else {
			x = cg_idx_of(in->rank, in->shape);
			x.flat = cg_offset(kb, out);
		}
		break;
	case OP_PERMUTE:
	case OP_SWAP_DIMS:
		cg_idx_dims(kb, out);
		x = cg_idx_of(in->rank, in->shape);
		x.has_dims = true;
		for (int d = 0; d < out->rank; d++)
			x.i[d] = out->i[d];
		if (op->kind == OP_PERMUTE) {
			for (int d = 0; d < op->attr.n && d < out->rank; d++)
				x.i[op->attr.axes[d]] = out->i[d];
		} else {
			int a = op->attr.axes[0], b = op->attr.axes[1];
			x.i[a] = out->i[b];
			x.i[b] = out->i[a];
		}
		break;
	case OP_EXPAND:
		x = cg_idx_broadcast(kb, out, in);
		break;
	case OP_SLICE:
		cg_idx_dims(kb, out);
		x = cg_idx_of(in->rank, in->shape);
		x.has_dims = true;
		for (int d = 0; d < out->rank; d++) {
			x.i[d] = out->i[d];
			if (2 * d < op->nplace) {
				LLVMValueRef s = cg_scalar_as(kb, op->place0 + 2 * d, DT_I64);
				x.i[d] = LLVMBuildAdd(kb->b, x.i[d], s, "");
			}
		}
		break;
	default:
		die("not a view: %s", ir_ops[op->kind].file);
	}
	return cg_eval(kb, in->id, &x);
}

/* ---- the vector path ------------------------------------------------------- */

int cg_vector_width(CgKb *kb, int rank, const uint32_t *ref, const bool *read,
		    const bool *written)
{
	const CgKernelSpec *s = kb->spec;
	bool vector = rank > 0;
	int maxsize = 1;
	for (int i = 0; i < s->nops && vector; i++)
		if (!ir_op_is_elementwise(s->ops[i].kind))
			vector = false;
	for (int i = 0; i < kb->ntensors && vector; i++) {
		if (!read[i] && !written[i])
			continue;
		const RelTensor *t = kb->tinfo[i];
		if (!cg_same_shape(t->rank, t->shape, rank, ref))
			vector = false;
		if (ir_dtype_size((DType)t->dtype) > maxsize)
			maxsize = ir_dtype_size((DType)t->dtype);
	}
	return vector ? CG_VEC_BYTES / maxsize : 1;
}

/* The vector body: V lanes from vbase, 16-byte accesses. */
static void vector_body(CgKb *kb, int rank, const uint32_t *ref, const int *wr, int nw)
{
	CgModule *m = kb->m;
	memset(kb->vload, 0, sizeof *kb->vload * (size_t)kb->ntensors);
	LLVMValueRef *lanes = xcalloc((size_t)nw * (size_t)kb->vec, sizeof *lanes);
	for (int l = 0; l < kb->vec; l++) {
		kb->nmemo = 0;
		CgIdx x = cg_idx_of(rank, ref);
		x.lane = l;
		x.flat = LLVMBuildAdd(kb->b, kb->vbase, cg_i64(kb, l), "");
		for (int k = 0; k < nw; k++) {
			CgIdx y = x;
			y.shape = kb->tinfo[wr[k]]->shape;
			lanes[k * kb->vec + l] = cg_eval(kb, wr[k], &y);
		}
	}
	kb->nmemo = 0;
	for (int k = 0; k < nw; k++) {
		DType dt = (DType)kb->tinfo[wr[k]]->dtype;
		LLVMTypeRef st = cg_stype(m, dt);
		LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(st, (unsigned)kb->vec));
		for (int l = 0; l < kb->vec; l++)
			vec = LLVMBuildInsertElement(kb->b, vec, cg_narrow(kb, lanes[k * kb->vec + l], dt),
						     LLVMConstInt(m->t_i32, (unsigned)l, 0), "");
		int bytes = kb->vec * ir_dtype_size(dt);
		LLVMTypeRef it = bytes == 16 ? LLVMVectorType(m->t_i32, 4)
					     : LLVMIntTypeInContext(m->ctx, (unsigned)bytes * 8);
		LLVMValueRef p = LLVMBuildGEP2(kb->b, st, kb->buf[wr[k]], &kb->vbase, 1, "");
		LLVMValueRef s = LLVMBuildStore(kb->b, LLVMBuildBitCast(kb->b, vec, it, ""), p);
		LLVMSetAlignment(s, (unsigned)bytes);
	}
	free(lanes);
}

LLVMValueRef cg_vector_loops(CgKb *kb, int rank, const uint32_t *ref, const int *wr, int nw,
			     LLVMValueRef n)
{
	CgModule *m = kb->m;
	LLVMValueRef mis = NULL;
	for (int i = 0; i < kb->ntensors; i++) {
		if (!kb->buf[i])
			continue;
		LLVMValueRef a = LLVMBuildPtrToInt(kb->b, kb->buf[i], m->t_i64, "");
		mis = mis ? LLVMBuildOr(kb->b, mis, a, "") : a;
	}
	mis = LLVMBuildAnd(kb->b, mis, cg_i64(kb, CG_VEC_BYTES - 1), "");
	LLVMValueRef aligned = LLVMBuildICmp(kb->b, LLVMIntEQ, mis, cg_i64(kb, 0), "");
	LLVMValueRef nvec = LLVMBuildUDiv(kb->b, n, cg_i64(kb, kb->vec), "");
	nvec = LLVMBuildSelect(kb->b, aligned, nvec, cg_i64(kb, 0), "nvec");
	CgLoop l;
	cg_loop_begin(kb, &l, kb->thread, nvec, kb->nthreads);
	kb->vbase = LLVMBuildMul(kb->b, l.i, cg_i64(kb, kb->vec), "");
	vector_body(kb, rank, ref, wr, nw);
	cg_loop_end(kb, &l);
	return LLVMBuildAdd(kb->b, LLVMBuildMul(kb->b, nvec, cg_i64(kb, kb->vec), ""),
			    kb->thread, "");
}
