/* frame.c: the kernel frame and the launch rule.
 *
 * cg_kernel returns the module's kernel for a CgKernelSpec, building it with cg_build
 * unless an equal spec was built before (module.c keeps them). cg_build turns the spec
 * into one LLVM function, whatever its kind (the kind only names it). It finds the
 * kernel's global tensors, placeholders and shape ids (which become parameters, see
 * codegen.h), the iteration space (the broadcast of the written tensors' shapes), and
 * picks a schedule: the vector path of all-elementwise kernels (kernel_elemwise.c), row
 * mode when a reduction is broadcast back over its axis (reduce_plain.c), and a
 * grid-stride loop over the iteration space otherwise (also the vector path's tail).
 * Each loop evaluates and stores the written tensors through the evaluator (eval.c). A
 * written tensor smaller than the iteration space (a broadcast dim) is evaluated and
 * stored only where its broadcast positions are 0.
 *
 * The plain loop of a rank >= 2 iteration space is chunked: a thread takes CG_CHUNK
 * consecutive elements, the per-dim position of the first from divisions, of the
 * others by a carry (chunk_loops). These are the kernels the vector path turns down,
 * views and broadcasts, whose reads need the positions; a 64-bit division by a shape
 * held in a parameter is some twenty instructions even when LLVM narrows it to 32
 * bits, and ran the slices and permutes of a transformer compute-bound at a sixth of
 * the bandwidth on the H200 (docs/benchmarks.md).
 *
 * The launch rule (cg_launch_dims): CG_BLOCK threads per block, one thread per element
 * of the launch's work dims (per V elements on the vector path, per CG_CHUNK on the
 * chunked one, per row in row mode), the grid capped at CG_MAX_GRID; the loops stride
 * by the grid's size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"

/* ---- the frame --------------------------------------------------------------- */

typedef struct {
	int ntensors, maxplace, maxdim;
	bool *read, *written, *placeused, *dimused;
} Usage;

static void usage_free(Usage *u)
{
	free(u->read);
	free(u->written);
	free(u->placeused);
	free(u->dimused);
}

static int analyze(CgKb *kb, const CgKernelSpec *s, Usage *u)
{
	memset(u, 0, sizeof *u);
	for (int i = 0; i < s->nops; i++) {
		const RelOp *op = &s->ops[i];
		OpFamily f = ir_ops[op->kind].family;
		if (op->kind >= OP_COUNT || f == FAM_CONTROL)
			return cg_fail(kb, "op '%s' cannot be part of a kernel",
				       op->kind < OP_COUNT ? ir_ops[op->kind].file : "?");
		for (int k = 0; k < op->nin + op->nout; k++) {
			const RelTensor *t = &op->t[k];
			if (t->id + 1 > u->ntensors)
				u->ntensors = t->id + 1;
			for (int d = 0; d < t->rank; d++)
				if ((int)t->shape[d] + 1 > u->maxdim)
					u->maxdim = (int)t->shape[d] + 1;
		}
		if (op->place0 + op->nplace > u->maxplace)
			u->maxplace = op->place0 + op->nplace;
	}
	int nt = u->ntensors;
	kb->ntensors = nt;
	kb->tinfo = xcalloc((size_t)nt + 1, sizeof *kb->tinfo);
	kb->producer = xmalloc(sizeof *kb->producer * ((size_t)nt + 1));
	for (int i = 0; i < nt; i++)
		kb->producer[i] = -1;
	u->read = xcalloc((size_t)nt + 1, 1);
	u->written = xcalloc((size_t)nt + 1, 1);
	u->placeused = xcalloc((size_t)u->maxplace + 1, 1);
	u->dimused = xcalloc((size_t)u->maxdim + 1, 1);
	for (int i = 0; i < s->nops; i++) {
		const RelOp *op = &s->ops[i];
		for (int k = 0; k < op->nin + op->nout; k++) {
			const RelTensor *t = &op->t[k];
			if (!kb->tinfo[t->id])
				kb->tinfo[t->id] = t;
			for (int d = 0; d < t->rank; d++)
				u->dimused[t->shape[d]] = true;
			if (k < op->nin && kb->producer[t->id] < 0)
				u->read[t->id] = true;
		}
		for (int k = 0; k < op->nout; k++) {
			int id = op->t[op->nin + k].id;
			if (kb->producer[id] >= 0 || u->read[id])
				return cg_fail(kb, "internal: tensor t%d is produced twice or read before it is produced", id);
			kb->producer[id] = i;
			if (id < s->nwritten && s->written[id])
				u->written[id] = true;
		}
		for (int p = 0; p < op->nplace; p++)
			if (op->kind != OP_SLICE || p % 2 == 0)
				u->placeused[op->place0 + p] = true;
	}
	u->dimused[0] = false;
	return 0;
}

static void kernel_name(CgModule *m, const CgKernelSpec *s, uint64_t hash, char *buf, size_t n)
{
	const char *base = cg_kernel_kind_name(s->kind);
	if (s->kind == CG_KERNEL_SINGLE)
		base = ir_ops[s->ops[0].kind].file;
	else if (s->kind != CG_KERNEL_ELEMWISE)
		base = s->kind == CG_KERNEL_MATMUL ? "matmul_fused" : "reduce_fused";
	const char *lay = s->nhwc ? "_nhwc" : "";
	snprintf(buf, n, "%s%s_%016llx", base, lay, (unsigned long long)hash);
	for (int k = 1; LLVMGetNamedFunction(m->mod, buf); k++)
		snprintf(buf, n, "%s%s_%016llx_%d", base, lay, (unsigned long long)hash, k);
}

static LLVMValueRef sreg(CgKb *kb, const char *name)
{
	LLVMValueRef v = cg_intrinsic(kb, name, NULL, 0, NULL, 0);
	return LLVMBuildZExt(kb->b, v, kb->m->t_i64, "");
}

static LLVMTypeRef param_type(CgModule *m, const CgParam *p)
{
	if (p->kind == CG_PARAM_TMAP)   /* generic: the kernel passes its address on */
		return LLVMPointerTypeInContext(m->ctx, 0);
	return p->kind == CG_PARAM_BUFFER || p->kind == CG_PARAM_SCRATCH ? m->t_ptr :
	       p->kind == CG_PARAM_SCALAR ? m->t_f64 : m->t_i64;
}

/* One !nvvm.annotations entry {fn, key, value} (the NVPTX backend reads them). */
static void annotate(CgModule *m, LLVMValueRef fn, const char *key, int value)
{
	LLVMMetadataRef md[3] = {
		LLVMValueAsMetadata(fn),
		LLVMMDStringInContext2(m->ctx, key, strlen(key)),
		LLVMValueAsMetadata(LLVMConstInt(m->t_i32, (unsigned)value, 0)),
	};
	LLVMAddNamedMetadataOperand(m->mod, "nvvm.annotations",
				    LLVMMetadataAsValue(m->ctx, LLVMMDNodeInContext2(m->ctx, md, 3)));
}

/* The CG_PARAM_TMAP parameters of kernel fn: 128 bytes passed by value
 * (byval, aligned to 64, as the driver wants a CUtensorMap) and grid constants, so
 * that the kernel reads the map where the launch put it, through its generic address
 * (the NVPTX backend's cvta.param), never from a local copy: what the TMA
 * instructions need. */
static void tmap_params(CgModule *m, LLVMValueRef fn, const CgParam *ps, int np)
{
	LLVMMetadataRef idx[1 + IR_MM_GROUP_MAX];
	int n = 0;
	LLVMTypeRef bytes = LLVMArrayType(m->t_i8, CG_TMAP_BYTES);
	for (int i = 0; i < np; i++) {
		if (ps[i].kind != CG_PARAM_TMAP)
			continue;
		unsigned at = (unsigned)i + 1;   /* attribute index: 1 is the first parameter */
		LLVMAddAttributeAtIndex(fn, at, LLVMCreateTypeAttribute(m->ctx,
			LLVMGetEnumAttributeKindForName("byval", 5), bytes));
		LLVMAddAttributeAtIndex(fn, at, LLVMCreateEnumAttribute(m->ctx,
			LLVMGetEnumAttributeKindForName("align", 5), CG_TMAP_ALIGN));
		if (n < 1 + IR_MM_GROUP_MAX)   /* grid_constant counts parameters from 1 */
			idx[n++] = LLVMValueAsMetadata(LLVMConstInt(m->t_i32, at, 0));
	}
	if (!n)
		return;
	LLVMMetadataRef md[3] = {
		LLVMValueAsMetadata(fn),
		LLVMMDStringInContext2(m->ctx, "grid_constant", 13),
		LLVMMDNodeInContext2(m->ctx, idx, (size_t)n),
	};
	LLVMAddNamedMetadataOperand(m->mod, "nvvm.annotations",
				    LLVMMetadataAsValue(m->ctx, LLVMMDNodeInContext2(m->ctx, md, 3)));
}

/* The kernel's first instructions where the module takes programmatic dependent
 * launch (cg_module_pdl): wait for the grids before it, then let the next launch
 * (its blocks wait in turn, so they may be placed while this grid runs). Before
 * any access to global memory: at the kernel's start, or where a warp-specialized
 * matmul has set its barriers up (cg_matmul_waits_late). */
void cg_grid_wait(CgKb *kb)
{
	static const char text[] = "griddepcontrol.wait; griddepcontrol.launch_dependents;";
	LLVMTypeRef ft = LLVMFunctionType(kb->m->t_void, NULL, 0, 0);
	LLVMValueRef fn = LLVMGetInlineAsm(ft, text, sizeof text - 1, "~{memory}", 9, 1, 0,
					   LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(kb->b, ft, fn, NULL, 0, "");
}

static void make_function(CgKb *kb, const char *name, const CgParam *ps, int np, int threads)
{
	CgModule *m = kb->m;
	bool gpu = m->opt.target == CG_TARGET_NVPTX;
	LLVMTypeRef *types = xmalloc(sizeof *types * ((size_t)np + 3));
	for (int i = 0; i < np; i++)
		types[i] = param_type(m, &ps[i]);
	LLVMTypeRef host[3] = {m->t_ptr, m->t_i64, m->t_i64};
	LLVMTypeRef ft = gpu ? LLVMFunctionType(m->t_void, types, (unsigned)np, 0)
			     : LLVMFunctionType(m->t_void, host, 3, 0);
	kb->fn = LLVMAddFunction(m->mod, name, ft);
	if (gpu) {
		LLVMSetFunctionCallConv(kb->fn, LLVMPTXKernelCallConv);
		/* Every launch uses CG_BLOCK threads (a warp-specialized matmul's more:
		 * cg_matmul_threads). No minimum of resident blocks is asked for: on
		 * the H200, capping a 40-op fused kernel at 64 registers made it spill
		 * and cost a third of its bandwidth (docs/benchmarks.md). */
		annotate(m, kb->fn, "maxntidx", threads);
		tmap_params(m, kb->fn, ps, np);
	}
	LLVMPositionBuilderAtEnd(kb->b, LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "entry"));
	LLVMValueRef *vals = xmalloc(sizeof *vals * ((size_t)np + 1));
	for (int i = 0; i < np; i++) {
		if (gpu) {
			vals[i] = LLVMGetParam(kb->fn, (unsigned)i);
			continue;
		}
		LLVMValueRef k = cg_i64(kb, i);
		LLVMValueRef slot = LLVMBuildGEP2(kb->b, m->t_ptr, LLVMGetParam(kb->fn, 0), &k, 1, "");
		LLVMValueRef at = LLVMBuildLoad2(kb->b, m->t_ptr, slot, "");
		vals[i] = LLVMBuildLoad2(kb->b, types[i], at, "");
	}
	for (int i = 0; i < np; i++) {
		const CgParam *p = &ps[i];
		char nm[32];
		snprintf(nm, sizeof nm, "%s%d", p->kind == CG_PARAM_BUFFER ? "t" :
			 p->kind == CG_PARAM_SCALAR ? "s" : p->kind == CG_PARAM_SCRATCH ? "scratch" :
			 p->kind == CG_PARAM_TMAP ? "tmap" : "d", p->id);
		LLVMSetValueName2(vals[i], nm, strlen(nm));
		if (p->kind == CG_PARAM_TMAP)
			kb->tmap[p->id] = vals[i];
		else if (p->kind == CG_PARAM_BUFFER)
			kb->buf[p->id] = vals[i];
		else if (p->kind == CG_PARAM_SCALAR)
			kb->scalar[p->id] = vals[i];
		else if (p->kind == CG_PARAM_SCRATCH)
			kb->scratch = vals[i];
		else
			kb->dim[p->id] = vals[i];
	}
	if (gpu) {
		LLVMValueRef ctaid = sreg(kb, "llvm.nvvm.read.ptx.sreg.ctaid.x");
		LLVMValueRef ntid = sreg(kb, "llvm.nvvm.read.ptx.sreg.ntid.x");
		LLVMValueRef tid = sreg(kb, "llvm.nvvm.read.ptx.sreg.tid.x");
		LLVMValueRef nctaid = sreg(kb, "llvm.nvvm.read.ptx.sreg.nctaid.x");
		kb->thread = LLVMBuildAdd(kb->b, LLVMBuildMul(kb->b, ctaid, ntid, ""), tid, "thread");
		kb->nthreads = LLVMBuildMul(kb->b, nctaid, ntid, "nthreads");
	} else {
		kb->thread = LLVMGetParam(kb->fn, 1);
		kb->nthreads = LLVMGetParam(kb->fn, 2);
	}
	free(types);
	free(vals);
}

/* Build knobs for measuring the thread order of the two NHWCRelayout kernels: 1 runs
 * the trace's (WRITE) or the pool's (POOL) threads in NCHW order instead, the
 * channel-last tensor still addressed channel-last (docs/benchmarks.md,
 * "NHWCRelayout"). */
#ifndef FUSEC_NHWC_WRITE_NCHW
#define FUSEC_NHWC_WRITE_NCHW 0
#endif
#ifndef FUSEC_NHWC_POOL_NCHW
#define FUSEC_NHWC_POOL_NCHW 0
#endif

/* The grid-stride loop of a kernel with a channel-last tensor (CgKernelSpec.nhwc):
 * consecutive threads take consecutive positions of the rank-4 iteration space
 * (N, C, H, W) in the order N, H, W, C, so a warp's accesses to the channel-last
 * tensor are consecutive: the trace's stores of it, or the pool's loads of a window
 * position over 32 channels. Other tensors are addressed as usual (NCHW), reads
 * through the index arithmetic. */
static void nhwc_loop(CgKb *kb, const uint32_t *ref, LLVMValueRef n, const int *wr, int nw)
{
	static const int inner_first[4] = {1, 3, 2, 0};   /* C, W, H, N */
	CgLoop l;
	cg_loop_begin(kb, &l, kb->thread, n, kb->nthreads);
	kb->nmemo = 0;
	CgIdx x = cg_idx_of(4, ref);
	LLVMValueRef f = l.i;
	for (int k = 0; k < 4; k++) {
		int d = inner_first[k];
		if (ref[d] == 0) {
			x.i[d] = cg_i64(kb, 0);
			continue;
		}
		if (k == 3) {
			x.i[d] = f;
			continue;
		}
		LLVMValueRef size = cg_dim(kb, ref[d]);
		x.i[d] = LLVMBuildURem(kb->b, f, size, "");
		f = LLVMBuildUDiv(kb->b, f, size, "");
	}
	x.has_dims = true;
	kb->nhwc_flat = l.i;
	cg_store_written(kb, &x, wr, nw);
	kb->nhwc_flat = NULL;
	cg_loop_end(kb, &l);
}

/* Position x one element further: the innermost dim that is not broadcast steps, a
 * dim that reaches its size goes back to 0 and carries outwards. The outermost takes
 * the carry without a bound (past the end only in the last chunk, which is guarded). */
static void step_dims(CgKb *kb, CgIdx *x)
{
	LLVMValueRef c = cg_i64(kb, 1);
	int outer = 0;
	while (outer < x->rank && x->shape[outer] == 0)
		outer++;
	for (int d = x->rank - 1; d >= outer; d--) {
		if (x->shape[d] == 0)
			continue;
		LLVMValueRef inc = LLVMBuildAdd(kb->b, x->i[d], c, "");
		if (d == outer) {
			x->i[d] = inc;
			break;
		}
		LLVMValueRef wrap = LLVMBuildICmp(kb->b, LLVMIntEQ, inc, cg_dim(kb, x->shape[d]), "");
		x->i[d] = LLVMBuildSelect(kb->b, wrap, cg_i64(kb, 0), inc, "");
		c = LLVMBuildZExt(kb->b, wrap, kb->m->t_i64, "");
	}
}

/* The CG_CHUNK elements of the chunk at flat index base: x at base, the next ones
 * stepped with a carry (step_dims), each stored under its own guard; or, when the
 * innermost dim is a multiple of CG_CHUNK (carry false), along it alone, under one
 * guard: then the elements share every outer index, and what a kernel computes
 * from those (a window's rows and columns, channels last) is computed once. */
static void chunk_body(CgKb *kb, CgIdx x, LLVMValueRef base, LLVMValueRef n, bool carry,
		       const int *wr, int nw)
{
	LLVMContextRef ctx = kb->m->ctx;
	LLVMValueRef first = x.i[x.rank - 1];
	LLVMBasicBlockRef next = NULL;
	for (int k = 0; k < CG_CHUNK; k++) {
		if (k > 0) {
			if (carry)
				step_dims(kb, &x);
			else
				x.i[x.rank - 1] = LLVMBuildAdd(kb->b, first, cg_i64(kb, k), "");
			x.flat = LLVMBuildAdd(kb->b, base, cg_i64(kb, k), "");
		}
		/* along the innermost dim n is a multiple of the chunk: one guard */
		if (carry || k == 0) {
			LLVMBasicBlockRef in = LLVMAppendBasicBlockInContext(ctx, kb->fn, "chunk.in");
			next = LLVMAppendBasicBlockInContext(ctx, kb->fn, "chunk.next");
			LLVMBuildCondBr(kb->b, LLVMBuildICmp(kb->b, LLVMIntSLT, x.flat, n, ""), in, next);
			LLVMPositionBuilderAtEnd(kb->b, in);
		}
		int mark = cg_memo_mark(kb);
		CgIdx y = x;
		cg_store_written(kb, &y, wr, nw);
		cg_memo_release(kb, mark);
		if (carry || k == CG_CHUNK - 1) {
			LLVMBuildBr(kb->b, next);
			LLVMPositionBuilderAtEnd(kb->b, next);
		}
	}
}

/* Whether spec holds a conv or pool channels last: its chunks take the path along
 * the channels where they can (chunk_body). */
static bool window_nhwc(const CgKernelSpec *s)
{
	for (int i = 0; i < s->nops; i++)
		if (ir_ops[s->ops[i].kind].family == FAM_MODULE &&
		    s->ops[i].attr.layout == LAYOUT_NHWC)
			return true;
	return false;
}

/* The chunked grid-stride loop (see the top of the file): chunk c covers elements
 * [c*CG_CHUNK, c*CG_CHUNK + CG_CHUNK) of the n. */
static void chunk_loops(CgKb *kb, int rank, const uint32_t *ref, LLVMValueRef n,
			const int *wr, int nw)
{
	LLVMContextRef ctx = kb->m->ctx;
	LLVMValueRef u = cg_i64(kb, CG_CHUNK);
	LLVMValueRef nch = LLVMBuildUDiv(kb->b, LLVMBuildAdd(kb->b, n, cg_i64(kb, CG_CHUNK - 1), ""),
					u, "");
	CgLoop l;
	cg_loop_begin(kb, &l, kb->thread, nch, kb->nthreads);
	kb->nmemo = 0;
	LLVMValueRef base = LLVMBuildMul(kb->b, l.i, u, "");
	CgIdx x = cg_idx_of(rank, ref);
	x.flat = base;
	cg_idx_dims(kb, &x);
	if (!window_nhwc(kb->spec) || ref[rank - 1] == 0) {
		chunk_body(kb, x, base, n, true, wr, nw);
		cg_loop_end(kb, &l);
		return;
	}
	LLVMBasicBlockRef along = LLVMAppendBasicBlockInContext(ctx, kb->fn, "chunk.along");
	LLVMBasicBlockRef carry = LLVMAppendBasicBlockInContext(ctx, kb->fn, "chunk.carry");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, kb->fn, "chunk.done");
	LLVMValueRef last = cg_dim(kb, ref[rank - 1]);
	LLVMValueRef whole = LLVMBuildICmp(kb->b, LLVMIntEQ,
		LLVMBuildURem(kb->b, last, u, ""), cg_i64(kb, 0), "");
	LLVMBuildCondBr(kb->b, whole, along, carry);
	for (int c = 0; c < 2; c++) {
		LLVMPositionBuilderAtEnd(kb->b, c ? carry : along);
		int mark = cg_memo_mark(kb);
		chunk_body(kb, x, base, n, c == 1, wr, nw);
		cg_memo_release(kb, mark);
		LLVMBuildBr(kb->b, done);
	}
	LLVMPositionBuilderAtEnd(kb->b, done);
	cg_loop_end(kb, &l);
}

static void kb_free(CgKb *kb)
{
	free(kb->tinfo);
	free(kb->producer);
	free(kb->buf);
	free(kb->scalar);
	free(kb->dim);
	free(kb->vload);
	free(kb->memo);
}

/* What cg_build decides before it builds anything: the kernel's tensors, its
 * iteration space and its schedule. cg_reduce_long_rows asks it too, builder-less. */
typedef struct {
	Usage u;
	int *wr, nw;                  /* the written tensors */
	int rank;
	uint32_t ref[IR_MAX_RANK];    /* the iteration space */
	bool nhwc, vector, coop;
	CgRed red;                    /* coop: the reduce kernel's plan */
	int row_axis;
} Frame;

static void frame_free(Frame *f)
{
	if (f->u.read)
		usage_free(&f->u);
	free(f->wr);
}

static int plan_frame(CgKb *kb, const CgKernelSpec *s, Frame *f)
{
	memset(f, 0, sizeof *f);
	Usage *u = &f->u;
	if (analyze(kb, s, u))
		return -1;

	/* the written tensors and the iteration space */
	f->wr = xmalloc(sizeof *f->wr * ((size_t)u->ntensors + 1));
	for (int i = 0; i < u->ntensors; i++)
		if (u->written[i])
			f->wr[f->nw++] = i;
	if (f->nw == 0)
		return cg_fail(kb, "internal: kernel writes no tensor");
	int rank = f->rank = kb->tinfo[f->wr[0]]->rank;
	uint32_t *ref = f->ref;
	for (int k2 = 0; k2 < f->nw; k2++) {
		const RelTensor *w = kb->tinfo[f->wr[k2]];
		if (w->rank != rank)
			return cg_fail(kb, "kernel writes tensors of ranks %d and %d: not supported yet",
				       rank, w->rank);
		for (int dd = 0; dd < rank; dd++) {
			if (w->shape[dd] == 0)
				continue;
			if (ref[dd] != 0 && ref[dd] != w->shape[dd])
				return cg_fail(kb, "kernel writes tensors whose shapes do not broadcast: not supported yet");
			ref[dd] = w->shape[dd];
		}
	}

	/* a channel-last tensor (NHWCRelayout): one plain loop in NHWC order */
	f->nhwc = s->nhwc > 0;
	if (f->nhwc && (rank != 4 || s->nhwc > u->ntensors || !(u->read[s->nhwc - 1] ||
								u->written[s->nhwc - 1])))
		return cg_fail(kb, "internal: channel-last tensor t%d is not a rank-4 tensor of the kernel",
			       s->nhwc - 1);

	/* vector path? (kernel_elemwise.c) */
	kb->vec = f->nhwc ? 1 : cg_vector_width(kb, rank, ref, u->read, u->written);
	f->vector = kb->vec > 1;

	/* row mode: a reduction whose result is broadcast back over its axis (softmax,
	 * layer norm) is computed once per row, then the row's elements are written
	 * (reduce_plain.c); a cooperative kernel where one can be (reduce_plan.c) */
	f->coop = !f->vector && !f->nhwc && cg_reduce_plan(kb, s, rank, ref, u->written, &f->red);
	f->row_axis = f->vector || f->coop || f->nhwc ? -1 : cg_row_axis(s, rank, ref);
	return 0;
}

int cg_reduce_long_rows(const CgKernelSpec *s, const int64_t *dims, int ndims, bool dyn,
			int64_t *row)
{
	if (row)
		row[0] = row[1] = row[2] = 0;
	bool reduce = false;
	for (int i = 0; i < s->nops && !reduce; i++)
		reduce = ir_ops[s->ops[i].kind].family == FAM_REDUCE;
	if (!reduce || (s->kind == CG_KERNEL_SINGLE && s->nops != 1))
		return 0;
	Diag d = {0};
	CgKb kb0, *kb = &kb0;
	memset(kb, 0, sizeof *kb);
	kb->spec = s;
	kb->d = &d;   /* a kernel that fails here fails again in cg_build, which says so */
	kb->nhwc = s->nhwc - 1;
	Frame fr;
	int kind = 0;
	if (!plan_frame(kb, s, &fr) && fr.coop) {
		int64_t rows = 1;
		for (int i = 0; i < fr.rank; i++)
			if (i != fr.red.axis && fr.ref[i] != 0)
				rows *= (int)fr.ref[i] < ndims ? dims[fr.ref[i]] : 1;
		int64_t n = fr.red.n && (int)fr.red.n < ndims ? dims[fr.red.n] : 1;
		kind = cg_reduce_long(s, &fr.red, n, rows, dyn);
		/* rows mode, neither split nor in dynamic shared memory: the block is
		 * the launch rule's at these sizes. Built for it where the rows are
		 * few (registers to spare) or a thread holds at most the V-groups of
		 * a row that a trip loads together: the loops over more unroll into
		 * more values live at once, and at 48 registers G4 spilled 96 bytes
		 * and G15 52 (none either way with 2 or fewer) */
		int64_t G, R;
		if (row && !fr.red.split && !fr.red.column && n > 0 &&
		    kind != CG_RED_LONG_DYN && kind != CG_RED_LONG_F32_DYN) {
			cg_reduce_rows_block(n, rows, fr.red.cache, &G, &R);
			if (kind == CG_RED_FEW || (n + G * fr.red.vec - 1) / (G * fr.red.vec) <= CG_RED_TRIPS) {
				row[0] = n;
				row[1] = G;
				row[2] = R;
			}
		}
	}
	frame_free(&fr);
	kb_free(kb);
	return kind;
}

CgKernel *cg_build(CgModule *m, const CgKernelSpec *s, uint64_t hash, Diag *d)
{
	if (s->nops < 1) {
		diag_set(d, "codegen", 0, 0, "internal: a kernel needs at least one op");
		return NULL;
	}
	if (s->kind == CG_KERNEL_SINGLE && s->nops != 1) {
		diag_set(d, "codegen", 0, 0, "internal: a single-op kernel got %d ops", s->nops);
		return NULL;
	}
	CgKb kb0, *kb = &kb0;
	memset(kb, 0, sizeof *kb);
	kb->m = m;
	kb->b = m->b;
	kb->spec = s;
	kb->d = d;
	kb->nhwc = s->nhwc - 1;
	CgKernel *k = NULL;
	Frame fr;
	if (plan_frame(kb, s, &fr))
		goto out;
	const Usage *u = &fr.u;
	const int *wr = fr.wr;
	int nw = fr.nw, rank = fr.rank, row_axis = fr.row_axis;
	const uint32_t *ref = fr.ref;
	bool nhwc = fr.nhwc, vector = fr.vector, coop = fr.coop;
	const CgRed *red = &fr.red;

	/* parameters */
	int np = 0;
	for (int i = 0; i < u->ntensors; i++)
		np += u->read[i] || u->written[i];
	for (int i = 0; i < u->maxplace; i++)
		np += u->placeused[i];
	for (int i = 0; i < u->maxdim; i++)
		np += u->dimused[i];
	np += coop && red->split;   /* the scratch of split reductions */
	bool mm_split = !coop && s->variant > 0 && cg_matmul_splits(s->variant);
	np += mm_split;            /* the scratch of split-K matmuls */
	int ntmap = coop ? 0 : cg_matmul_tmaps(s, m->opt.target == CG_TARGET_NVPTX);
	np += ntmap;               /* a warp-specialized matmul's tensor maps */
	k = ARENA_NEW(m->arena, CgKernel, 1);
	k->pdl = cg_module_pdl(m);
	k->params = ARENA_NEW(m->arena, CgParam, np + 1);
	for (int i = 0; i < u->ntensors; i++)
		if (u->read[i] || u->written[i])
			k->params[k->nparams++] = (CgParam){CG_PARAM_BUFFER, i,
				(DType)kb->tinfo[i]->dtype, u->read[i], u->written[i]};
	for (int i = 0; i < u->maxplace; i++)
		if (u->placeused[i])
			k->params[k->nparams++] = (CgParam){CG_PARAM_SCALAR, i, DT_F64, false, false};
	for (int i = 0; i < u->maxdim; i++)
		if (u->dimused[i])
			k->params[k->nparams++] = (CgParam){CG_PARAM_DIM, i, DT_I64, false, false};
	if ((coop && red->split) || mm_split)
		k->params[k->nparams++] = (CgParam){CG_PARAM_SCRATCH, 0, DT_U8, true, true};
	for (int i = 0; i < ntmap; i++)
		k->params[k->nparams++] = (CgParam){CG_PARAM_TMAP, i, DT_U8, true, false};
	char name[96];
	kernel_name(m, s, hash, name, sizeof name);
	k->name = arena_strdup(m->arena, name);
	k->kind = s->kind;
	k->vectorized = vector;
	k->variant = s->variant;
	bool chunk = !vector && !coop && !nhwc && row_axis < 0 && s->variant == 0 && rank >= 2;
	for (int i = 0; i < s->nops && chunk; i++) {
		OpFamily f = ir_ops[s->ops[i].kind].family;
		/* an element of a reduction or a matmul is a loop of its own: those keep
		 * a thread each; a window's (conv2d, the pools) is unrolled (its size is
		 * the op's), and a chunk divides its index once for CG_CHUNK elements */
		chunk = f != FAM_REDUCE && f != FAM_MATMUL;
	}
	k->launch.vec = chunk ? CG_CHUNK : kb->vec;
	k->launch.block = CG_BLOCK;
	k->launch.max_grid = CG_MAX_GRID;
	for (int dd = 0; dd < rank; dd++)
		if (ref[dd] != 0 && dd != row_axis)
			k->launch.work[k->launch.nwork++] = ref[dd];

	kb->buf = xcalloc((size_t)u->ntensors + 1, sizeof *kb->buf);
	kb->vload = xcalloc((size_t)u->ntensors + 1, sizeof *kb->vload);
	kb->nplace = u->maxplace;
	kb->scalar = xcalloc((size_t)u->maxplace + 1, sizeof *kb->scalar);
	kb->ndims = u->maxdim;
	kb->dim = xcalloc((size_t)u->maxdim + 1, sizeof *kb->dim);
	if (coop) {
		CgCoop c;
		cg_coop_function(kb, name, k->params, k->nparams,
				 red->dyn_bytes ? CG_RED_DYN_THREADS : CG_RED_THREADS, &c);
		if (k->pdl)
			cg_grid_wait(kb);
		cg_coop_annotate(&c, "maxnreg", red->long_rows ? CG_RED_LONG_MAXNREG
					       : red->few ? CG_RED_FEW_MAXNREG : CG_RED_MAXNREG);
		kb->math = (CgMath){m->ctx, m->mod, kb->b, m->opt.target == CG_TARGET_NVPTX,
				    m->opt.libdevice != NULL && m->opt.target == CG_TARGET_NVPTX};
		cg_reduce_kernel(kb, &c, red, ref, wr, nw, k);
		cg_coop_finish(&c);
		goto built;
	}
	make_function(kb, name, k->params, k->nparams,
		      s->variant > 0 ? cg_matmul_threads(s->variant) : CG_BLOCK);
	kb->late_wait = k->pdl && m->opt.target == CG_TARGET_NVPTX && cg_matmul_waits_late(s->variant);
	if (k->pdl && !kb->late_wait)
		cg_grid_wait(kb);
	kb->math = (CgMath){m->ctx, m->mod, kb->b, m->opt.target == CG_TARGET_NVPTX,
			    m->opt.libdevice != NULL && m->opt.target == CG_TARGET_NVPTX};

	LLVMValueRef n = cg_i64(kb, 1);
	for (int dd = 0; dd < rank; dd++)
		n = LLVMBuildMul(kb->b, n, cg_dim(kb, ref[dd]), "");
	LLVMValueRef tail = kb->thread;
	if (vector)
		tail = cg_vector_loops(kb, rank, ref, wr, nw, n);
	if (s->variant > 0) {
		cg_matmul_launch(s->variant, s, &k->launch);
		cg_matmul_tiled(kb, s->variant, wr, nw);
	} else if (row_axis >= 0)
		cg_row_loops(kb, rank, ref, row_axis, wr, nw);
	else if (nhwc && !(u->written[s->nhwc - 1] ? FUSEC_NHWC_WRITE_NCHW : FUSEC_NHWC_POOL_NCHW))
		nhwc_loop(kb, ref, n, wr, nw);
	else if (chunk)
		chunk_loops(kb, rank, ref, n, wr, nw);
	else {
		CgLoop l;
		cg_loop_begin(kb, &l, tail, n, kb->nthreads);
		kb->nmemo = 0;
		CgIdx x = cg_idx_of(rank, ref);
		x.flat = l.i;
		cg_store_written(kb, &x, wr, nw);
		cg_loop_end(kb, &l);
	}
	LLVMBuildRetVoid(kb->b);
built:
	if (!kb->failed && cg_module_check_diag(m, d, "building a kernel"))
		kb->failed = true;
out:
	if (kb->failed) {
		if (kb->fn)
			LLVMDeleteFunction(kb->fn);
		k = NULL;
	}
	frame_free(&fr);
	kb_free(kb);
	return k;
}

const CgKernel *cg_kernel(CgModule *m, const CgKernelSpec *spec, Diag *d)
{
	if (m->finished || m->taken) {
		diag_set(d, "codegen", 0, 0, "internal: kernel added after the module was finished");
		return NULL;
	}
	uint64_t h = cg_spec_hash(spec);
	CgEntry *e = cg_module_find(m, spec, h);
	if (e)
		return e->k;
	CgKernel *k = cg_build(m, spec, h, d);
	if (!k)
		return NULL;
	k->index = m->nentries;
	cg_module_add(m, spec, h, k);
	return k;
}

/* ---- the launch rule ----------------------------------------------------------- */

void cg_launch_dims(const CgKernel *k, const int64_t *dims, int ndims, CgDims *out)
{
	cg_launch_eval(&k->launch, dims, ndims, out);
}
