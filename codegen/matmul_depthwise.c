/* matmul_depthwise.c: a depthwise convolution channels last, a kernel of its own.
 *
 * A depthwise conv (one input and one output channel per group: groups = C = OC)
 * has no GEMM worth a tile: each output is KH*KW products of one channel. Run one
 * thread per output it is bound by its index arithmetic, a 2-byte load and a
 * window position per product (MobileNetV3's 15 of them took 805 us of 1.93 ms at
 * batch 32, bf16, at 1-2 TFLOP/s). Channels last its channels are consecutive in
 * memory, so here a thread takes V channels of R consecutive output columns of one
 * output row:
 *   - the V channels are one 16-byte load (8 of f16/bf16, 4 of f32; fewer where the
 *     channel count is no multiple: V halves until it divides C), consecutive
 *     threads take consecutive groups of V, so a warp reads whole runs of a pixel's
 *     channels;
 *   - per window row, each input column the R outputs share is loaded once (output
 *     j at window column kw reads column j*s + kw*d of the thread's span);
 *   - the window rows are a loop LLVM does not unroll (its columns are unrolled):
 *     unrolled, ptxas hoisted every load of the window, 216 to 255 registers;
 *   - on the GPU each block first copies the weights to shared memory tap-major
 *     ([KH*KW][C], where they fit 48 KiB), so the V lanes of a tap are one 16-byte
 *     load and a warp's loads of a tap one run; read from global memory a thread's
 *     weights lie KH*KW*16 bytes from its neighbour's, a cache line per thread and
 *     tap (the host reads them there: the same values);
 *   - the products accumulate in f32 (fmuladd), window row then column, as the
 *     evaluator's order (kernel_join_window.c); outside the input reads zero;
 *   - the epilogue is the matmul's contract: the conv's value (its bias added,
 *     rounded to its dtype as the evaluator rounds it) enters the evaluator's
 *     memo at the output's index and every written tensor is evaluated there;
 *     each written tensor's V lanes are one vector store.
 * The configuration (matmul_pick.c: dwc4, dwc2, dwc1) is R (the rule: 1 or 2). It
 * is a plain grid-stride launch, the frame's (R*V outputs a thread): items are
 * (n, oh, ow/R, c/V), the channel group fastest. The same function runs on the
 * host. A buffer that is not 16-byte aligned takes the same loop with element
 * loads. */
#include <stdio.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "matmul.h"

/* Channels a thread takes: 16 bytes of them, halved until they divide C. */
static int dw_lanes(const RelOp *op)
{
	int v = 16 / ir_dtype_size((DType)op->t[0].dtype);
	int c = op->attr.groups > 0 ? op->attr.groups : 1;
	while (v > 1 && c % v)
		v /= 2;
	return v;
}

bool mm_dw_eligible(const RelOp *op, const int64_t *dims, int ndims)
{
	if (op->kind != OP_CONV2D || op->attr.layout != LAYOUT_NHWC || !mm_conv_eligible(op))
		return false;
	const RelTensor *w = &op->t[1], *o = &op->t[op->nin];
	int64_t g = op->attr.groups > 0 ? op->attr.groups : 1;
	/* one input channel per group (the weight's last dim is 1: shape id 0), and
	 * one output channel per group */
	return w->shape[3] == 0 && mm_dim_of(o->shape[3], dims, ndims) == g &&
	       op->attr.kernel[0] > 0 && op->attr.kernel[1] > 0;
}

int mm_dw_outputs(const MmConfig *c, const RelOp *op)
{
	return c->dw * dw_lanes(op);
}

typedef struct {
	CgKb *kb;
	LLVMBuilderRef b;
	const RelTensor *x, *w, *bias, *o;
	DType dt;
	int R, V, C, KH, KW;
	int s[2], p[2], d[2];
	LLVMValueRef H, W, OH, OW;   /* i64 */
	LLVMTypeRef st;              /* storage type of an element */
	LLVMValueRef wsh;            /* GPU: the weights in shared memory, [KH*KW][C]
					(storage type, addrspace 3), or NULL */
} Dw;

static LLVMValueRef i64c(Dw *w, int64_t v)
{
	return cg_i64(w->kb, v);
}

/* Whether 0 <= v < n (one unsigned compare) */
static LLVMValueRef inside(Dw *w, LLVMValueRef v, LLVMValueRef n)
{
	return LLVMBuildICmp(w->b, LLVMIntULT, v, n, "");
}

/* The V channels at element offset `at` of x as f32, zero where ok is false (the
 * address is clamped to 0 there, so the load stays inside the buffer). */
static void load_lanes(Dw *w, LLVMValueRef at, LLVMValueRef ok, bool vec, LLVMValueRef *out)
{
	CgModule *m = w->kb->m;
	LLVMValueRef base = w->kb->buf[w->x->id];
	at = LLVMBuildSelect(w->b, ok, at, i64c(w, 0), "");
	LLVMValueRef p = LLVMBuildGEP2(w->b, w->st, base, &at, 1, "");
	LLVMValueRef zero = LLVMConstReal(m->t_f32, 0);
	LLVMValueRef v = NULL;
	if (vec) {
		LLVMTypeRef vt = LLVMVectorType(w->st, (unsigned)w->V);
		v = LLVMBuildLoad2(w->b, vt, p, "");
		LLVMSetAlignment(v, (unsigned)(w->V * ir_dtype_size(w->dt)));
	}
	for (int l = 0; l < w->V; l++) {
		LLVMValueRef e;
		if (vec) {
			e = LLVMBuildExtractElement(w->b, v, LLVMConstInt(m->t_i32, (unsigned)l, 0), "");
		} else {
			LLVMValueRef k = i64c(w, l);
			LLVMValueRef q = LLVMBuildGEP2(w->b, w->st, p, &k, 1, "");
			e = LLVMBuildLoad2(w->b, w->st, q, "");
			LLVMSetAlignment(e, (unsigned)ir_dtype_size(w->dt));
		}
		e = cg_widen(w->kb, e, w->dt);
		out[l] = LLVMBuildSelect(w->b, ok, e, zero, "");
	}
}

/* The weight of lane v (channel c) at window position (kh, kw), f32. On the
 * GPU's vector path from the block's copy in shared memory, tap-major: the V
 * lanes of a tap are one 16-byte load, and a warp's loads of a tap one run of
 * bytes (from global memory the thread's weights lie 2*KH*KW*16 bytes from its
 * neighbour's: MobileNetV3's 5x5 layers spent most of their time on those
 * loads). On the host's vector path the V*KH*KW weights of the thread's channels
 * are contiguous (the weight is [C][KH][KW][1]) and start at a multiple of 16
 * bytes (c0*KH*KW elements, c0 a multiple of V = 16 bytes of them): 16-byte
 * loads, each once. */
static LLVMValueRef weight(Dw *w, LLVMValueRef *wvec, LLVMValueRef c0, int v, LLVMValueRef c,
			   LLVMValueRef khv, int kw)
{
	CgModule *m = w->kb->m;
	if (w->wsh) {   /* tap-major: lane v is element v of the 16 bytes at c0; the
			   window row khv is the row loop's (wvec: this row's taps) */
		if (!wvec[kw]) {
			LLVMValueRef t = LLVMBuildAdd(w->b, LLVMBuildMul(w->b, khv, i64c(w, w->KW), ""),
						      i64c(w, kw), "");
			LLVMValueRef at = LLVMBuildAdd(w->b, c0, LLVMBuildMul(w->b, t, i64c(w, w->C), ""), "");
			LLVMValueRef p = LLVMBuildGEP2(w->b, w->st, w->wsh, &at, 1, "");
			wvec[kw] = LLVMBuildLoad2(w->b, LLVMVectorType(w->st, (unsigned)w->V), p, "");
			LLVMSetAlignment(wvec[kw], 16);
		}
		LLVMValueRef l = LLVMBuildExtractElement(w->b, wvec[kw],
			LLVMConstInt(m->t_i32, (unsigned)v, 0), "");
		return cg_convert(w->kb, cg_widen(w->kb, l, w->dt), w->dt, DT_F32);
	}
	LLVMValueRef pos[4] = {c, khv, i64c(w, kw), i64c(w, 0)};
	CgIdx wi = cg_idx_at(w->w, pos);
	LLVMValueRef e = cg_eval(w->kb, w->w->id, &wi);
	return cg_convert(w->kb, e, (DType)w->w->dtype, DT_F32);
}

enum { DW_MAXR = 4, DW_MAXV = 8, DW_MAXSPAN = 64, DW_MAXW = MM_EPI_MAXW };

/* The bytes a written tensor's V lanes are stored in at once, at most 16 */
static int store_bytes(Dw *w, int t)
{
	int b = w->V * ir_dtype_size((DType)w->kb->tinfo[t]->dtype);
	return b < 16 ? b : 16;
}

/* The epilogue of the V outputs (n, oh, ow, c[0..V)) with accumulators acc (f32):
 * per lane the conv's value enters the memo and every written tensor is
 * evaluated there; each written tensor's V lanes are then one vector store
 * (vec: its address allows) or V element stores. */
static void epilogue(Dw *w, LLVMValueRef n, LLVMValueRef oh, LLVMValueRef ow, LLVMValueRef *c,
		     LLVMValueRef *acc, bool vec, const int *wr, int nw)
{
	CgKb *kb = w->kb;
	LLVMValueRef vals[DW_MAXW][DW_MAXV], off[DW_MAXV];
	for (int v = 0; v < w->V; v++) {
		int mark = cg_memo_mark(kb);
		CgIdx at = cg_idx_of(4, w->o->shape);
		at.has_dims = true;
		at.i[0] = n;
		at.i[1] = oh;
		at.i[2] = ow;
		at.i[3] = c[v];
		LLVMValueRef row = LLVMBuildAdd(w->b, LLVMBuildMul(w->b, n, w->OH, ""), oh, "");
		LLVMValueRef pix = LLVMBuildAdd(w->b, LLVMBuildMul(w->b, row, w->OW, ""), ow, "");
		at.flat = LLVMBuildAdd(w->b, LLVMBuildMul(w->b, pix, i64c(w, w->C), ""), c[v], "");
		off[v] = at.flat;
		LLVMValueRef a = acc[v];
		if (w->bias) {
			LLVMValueRef pos[IR_MAX_RANK];
			for (int d = 0; d < w->bias->rank; d++)
				pos[d] = w->bias->shape[d] == 0 ? i64c(w, 0) : c[v];
			CgIdx bi = cg_idx_at(w->bias, pos);
			LLVMValueRef bv = cg_eval(kb, w->bias->id, &bi);
			a = LLVMBuildFAdd(w->b, a, cg_convert(kb, bv, (DType)w->bias->dtype, DT_F32), "");
		}
		cg_memo_add(kb, w->o->id, &at, cg_round_to(kb, a, w->dt));
		for (int k = 0; k < nw; k++) {
			CgIdx y = at;
			y.shape = kb->tinfo[wr[k]]->shape;
			vals[k][v] = cg_eval(kb, wr[k], &y);
		}
		cg_memo_release(kb, mark);
	}
	CgModule *m = kb->m;
	for (int k = 0; k < nw; k++) {
		if (!vec) {
			for (int v = 0; v < w->V; v++)
				cg_store(kb, wr[k], off[v], vals[k][v]);
			continue;
		}
		DType dt = (DType)kb->tinfo[wr[k]]->dtype;
		LLVMTypeRef st = cg_stype(m, dt);
		int per = store_bytes(w, wr[k]) / ir_dtype_size(dt);   /* lanes a store */
		for (int v0 = 0; v0 < w->V; v0 += per) {
			LLVMValueRef x = LLVMGetUndef(LLVMVectorType(st, (unsigned)per));
			for (int v = 0; v < per; v++)
				x = LLVMBuildInsertElement(w->b, x, cg_narrow(kb, vals[k][v0 + v], dt),
							   LLVMConstInt(m->t_i32, (unsigned)v, 0), "");
			LLVMValueRef p = LLVMBuildGEP2(w->b, st, kb->buf[wr[k]], &off[v0], 1, "");
			LLVMSetAlignment(LLVMBuildStore(w->b, x, p), (unsigned)(per * ir_dtype_size(dt)));
		}
	}
}


/* Loop metadata on the back edge br: llvm.loop.unroll.disable (a loop ID is a
 * node whose first operand is itself) */
static void no_unroll(CgModule *m, LLVMValueRef br)
{
	LLVMMetadataRef self = LLVMTemporaryMDNode(m->ctx, NULL, 0);
	LLVMMetadataRef dis = LLVMMDStringInContext2(m->ctx, "llvm.loop.unroll.disable", 24);
	LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(m->ctx, &dis, 1)};
	LLVMMetadataRef id = LLVMMDNodeInContext2(m->ctx, ops, 2);
	LLVMMetadataReplaceAllUsesWith(self, id);
	LLVMSetMetadata(br, LLVMGetMDKindIDInContext(m->ctx, "llvm.loop", 9),
			LLVMMetadataAsValue(m->ctx, id));
}

/* The grid-stride loop over items (n, oh, ow / R, c / V); vec: 16-byte loads */
static void dw_loop(Dw *w, bool vec, const int *wr, int nw)
{
	CgKb *kb = w->kb;
	LLVMBuilderRef b = w->b;
	CgModule *m = kb->m;
	int R = w->R, V = w->V;
	int64_t cv = w->C / V;
	LLVMValueRef owb = LLVMBuildUDiv(b, LLVMBuildAdd(b, w->OW, i64c(w, R - 1), ""), i64c(w, R), "");
	LLVMValueRef N = cg_dim(kb, w->o->shape[0]);
	LLVMValueRef items = LLVMBuildMul(b, LLVMBuildMul(b, LLVMBuildMul(b, N, w->OH, ""), owb, ""),
					  i64c(w, cv), "");
	CgLoop l;
	cg_loop_begin(kb, &l, kb->thread, items, kb->nthreads);
	kb->nmemo = 0;
	LLVMValueRef q = LLVMBuildUDiv(b, l.i, i64c(w, cv), "");
	LLVMValueRef c0 = LLVMBuildMul(b, LLVMBuildURem(b, l.i, i64c(w, cv), ""), i64c(w, V), "");
	LLVMValueRef ow0 = LLVMBuildMul(b, LLVMBuildURem(b, q, owb, ""), i64c(w, R), "");
	q = LLVMBuildUDiv(b, q, owb, "");
	LLVMValueRef oh = LLVMBuildURem(b, q, w->OH, "");
	LLVMValueRef n = LLVMBuildUDiv(b, q, w->OH, "");

	LLVMValueRef acc[DW_MAXR][DW_MAXV];
	for (int j = 0; j < R; j++)
		for (int v = 0; v < V; v++)
			acc[j][v] = LLVMConstReal(m->t_f32, 0);
	LLVMValueRef c[DW_MAXV];
	for (int v = 0; v < V; v++)
		c[v] = LLVMBuildAdd(b, c0, i64c(w, v), "");
	/* the span's first input column, and the image's first element */
	LLVMValueRef iw0 = LLVMBuildSub(b, LLVMBuildMul(b, ow0, i64c(w, w->s[1]), ""), i64c(w, w->p[1]), "");
	LLVMValueRef img = LLVMBuildMul(b, n, w->H, "");
	LLVMValueRef wvec[DW_MAXSPAN];
	if (!vec)
		w->wsh = NULL;
	int span = (R - 1) * w->s[1] + (w->KW - 1) * w->d[1] + 1;
	/* the window rows: a loop LLVM must not unroll, so that a row's loads are
	 * issued in it (unrolled, ptxas hoisted every load of the window: 255
	 * registers and spills for a 5x5); the row's columns unrolled */
	LLVMValueRef accphi[DW_MAXR][DW_MAXV];
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
	LLVMBasicBlockRef hdr = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "dw.row");
	LLVMBuildBr(b, hdr);
	LLVMPositionBuilderAtEnd(b, hdr);
	LLVMValueRef khv = LLVMBuildPhi(b, m->t_i64, "kh");
	LLVMValueRef z = i64c(w, 0);
	LLVMAddIncoming(khv, &z, &pre, 1);
	for (int j = 0; j < R; j++)
		for (int v = 0; v < V; v++) {
			accphi[j][v] = LLVMBuildPhi(b, m->t_f32, "acc");
			LLVMAddIncoming(accphi[j][v], &acc[j][v], &pre, 1);
			acc[j][v] = accphi[j][v];
		}
	int mark = cg_memo_mark(kb);
	{
		memset(wvec, 0, sizeof wvec);
		LLVMValueRef ih = LLVMBuildAdd(b, LLVMBuildSub(b, LLVMBuildMul(b, oh, i64c(w, w->s[0]), ""),
							   i64c(w, w->p[0]), ""),
					       LLVMBuildMul(b, khv, i64c(w, w->d[0]), ""), "");
		LLVMValueRef rok = inside(w, ih, w->H);
		LLVMValueRef rowat = LLVMBuildMul(b, LLVMBuildAdd(b, img, ih, ""), w->W, "");
		/* the span's columns this window row reads, each loaded once */
		LLVMValueRef col[DW_MAXSPAN][DW_MAXV];
		bool used[DW_MAXSPAN] = {false};
		for (int j = 0; j < R; j++)
			for (int kw = 0; kw < w->KW; kw++)
				used[j * w->s[1] + kw * w->d[1]] = true;
		for (int e = 0; e < span; e++) {
			if (!used[e])
				continue;
			LLVMValueRef iw = LLVMBuildAdd(b, iw0, i64c(w, e), "");
			LLVMValueRef ok = LLVMBuildAnd(b, rok, inside(w, iw, w->W), "");
			LLVMValueRef at = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, rowat, iw, ""),
								       i64c(w, w->C), ""), c0, "");
			load_lanes(w, at, ok, vec, col[e]);
		}
		for (int kw = 0; kw < w->KW; kw++) {
			LLVMValueRef wv[DW_MAXV];
			for (int v = 0; v < V; v++)
				wv[v] = weight(w, wvec, c0, v, c[v], khv, kw);
			for (int j = 0; j < R; j++)
				for (int v = 0; v < V; v++) {
					LLVMValueRef args[3] = {col[j * w->s[1] + kw * w->d[1]][v], wv[v],
								acc[j][v]};
					acc[j][v] = cg_intrinsic(kb, "llvm.fmuladd", &m->t_f32, 1, args, 3);
				}
		}
	}
	cg_memo_release(kb, mark);
	/* the row loop is one block (no branches in it): its values reach the exit */
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
	LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "dw.rows");
	LLVMValueRef nx = LLVMBuildAdd(b, khv, i64c(w, 1), "");
	LLVMAddIncoming(khv, &nx, &latch, 1);
	for (int j = 0; j < R; j++)
		for (int v = 0; v < V; v++)
			LLVMAddIncoming(accphi[j][v], &acc[j][v], &latch, 1);
	LLVMValueRef br = LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, nx, i64c(w, w->KH), ""),
					  hdr, exit);
	no_unroll(m, br);
	LLVMPositionBuilderAtEnd(b, exit);
	/* the epilogue of each output column inside the plane */
	for (int j = 0; j < R; j++) {
		LLVMValueRef ow = LLVMBuildAdd(b, ow0, i64c(w, j), "");
		LLVMBasicBlockRef in = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "dw.out");
		LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "dw.next");
		LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, ow, w->OW, ""), in, next);
		LLVMPositionBuilderAtEnd(b, in);
		epilogue(w, n, oh, ow, c, acc[j], vec, wr, nw);
		LLVMBuildBr(b, next);
		LLVMPositionBuilderAtEnd(b, next);
	}
	cg_loop_end(kb, &l);
}

/* GPU: the block copies the weights to shared memory, tap-major ([KH*KW][C],
 * element e of the weight ([C][KH*KW]) to (e % KK)*C + e / KK: the global reads
 * in order), then waits for all of it. */
static void stage_weights(Dw *w)
{
	CgKb *kb = w->kb;
	CgModule *m = kb->m;
	int kk = w->KH * w->KW, n = w->C * kk;
	char name[128];
	snprintf(name, sizeof name, "%s_w", LLVMGetValueName(kb->fn));
	LLVMTypeRef at = LLVMArrayType(w->st, (unsigned)n);
	LLVMValueRef g = LLVMAddGlobalInAddressSpace(m->mod, at, name, 3);
	LLVMSetLinkage(g, LLVMInternalLinkage);
	LLVMSetInitializer(g, LLVMGetUndef(at));
	LLVMSetAlignment(g, 16);
	w->wsh = g;
	LLVMValueRef tid = LLVMBuildZExt(w->b, cg_intrinsic(kb, "llvm.nvvm.read.ptx.sreg.tid.x",
					 NULL, 0, NULL, 0), m->t_i64, "");
	CgLoop l;
	cg_loop_begin(kb, &l, tid, i64c(w, n), i64c(w, CG_BLOCK));
	LLVMValueRef c = LLVMBuildUDiv(w->b, l.i, i64c(w, kk), "");
	LLVMValueRef t = LLVMBuildURem(w->b, l.i, i64c(w, kk), "");
	LLVMValueRef src = LLVMBuildGEP2(w->b, w->st, kb->buf[w->w->id], &l.i, 1, "");
	LLVMValueRef v = LLVMBuildLoad2(w->b, w->st, src, "");
	LLVMSetAlignment(v, (unsigned)ir_dtype_size(w->dt));
	LLVMValueRef to = LLVMBuildAdd(w->b, LLVMBuildMul(w->b, t, i64c(w, w->C), ""), c, "");
	LLVMValueRef dst = LLVMBuildGEP2(w->b, w->st, g, &to, 1, "");
	LLVMSetAlignment(LLVMBuildStore(w->b, v, dst), (unsigned)ir_dtype_size(w->dt));
	cg_loop_end(kb, &l);
	cg_intrinsic(kb, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
}

int mm_dw_kernel(CgKb *kb, const MmConfig *cfg, const int *wr, int nw)
{
	CgModule *m = kb->m;
	Dw w0, *w = &w0;
	memset(w, 0, sizeof *w);
	w->kb = kb;
	w->b = kb->b;
	const RelOp *op = &kb->spec->ops[0];
	w->x = &op->t[0];
	w->w = &op->t[1];
	w->bias = op->nin > 2 ? &op->t[2] : NULL;
	w->o = &op->t[op->nin];
	w->dt = (DType)w->x->dtype;
	w->st = cg_stype(m, w->dt);
	w->R = cfg->dw;
	w->V = dw_lanes(op);
	w->C = op->attr.groups > 0 ? op->attr.groups : 1;
	w->KH = op->attr.kernel[0];
	w->KW = op->attr.kernel[1];
	for (int i = 0; i < 2; i++) {
		w->s[i] = op->attr.stride[i];
		w->p[i] = op->attr.padding[i];
		w->d[i] = op->attr.dilation[i];
	}
	int span = (w->R - 1) * w->s[1] + (w->KW - 1) * w->d[1] + 1;
	if (w->R > DW_MAXR || w->V > DW_MAXV || span > DW_MAXSPAN || w->KH < 1 || w->KW < 1 ||
	    !kb->buf[w->x->id] || nw > DW_MAXW)
		return cg_fail(kb, "internal: depthwise configuration %s does not take this conv",
			       cfg->name);
	w->H = cg_dim(kb, w->x->shape[1]);
	w->W = cg_dim(kb, w->x->shape[2]);
	w->OH = cg_dim(kb, w->o->shape[1]);
	w->OW = cg_dim(kb, w->o->shape[2]);
	/* 16-byte loads where the input's address allows (C is a multiple of V) */
	if (w->V == 1) {
		dw_loop(w, false, wr, nw);
		return kb->failed ? -1 : 0;
	}
	LLVMValueRef addr = LLVMBuildPtrToInt(w->b, kb->buf[w->x->id], m->t_i64, "");
	int64_t mask = (int64_t)w->V * ir_dtype_size(w->dt) - 1;
	LLVMValueRef aligned = LLVMBuildICmp(w->b, LLVMIntEQ, LLVMBuildAnd(w->b, addr, i64c(w, mask), ""),
					     i64c(w, 0), "");
	/* and the written tensors' for their vector stores */
	for (int k = 0; k < nw; k++) {
		LLVMValueRef a = LLVMBuildPtrToInt(w->b, kb->buf[wr[k]], m->t_i64, "");
		a = LLVMBuildAnd(w->b, a, i64c(w, store_bytes(w, wr[k]) - 1), "");
		aligned = LLVMBuildAnd(w->b, aligned, LLVMBuildICmp(w->b, LLVMIntEQ, a, i64c(w, 0), ""), "");
	}
	LLVMBasicBlockRef bv = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "dw.vec");
	LLVMBasicBlockRef be = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "dw.elem");
	LLVMBasicBlockRef bd = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "dw.done");
	LLVMBuildCondBr(w->b, aligned, bv, be);
	/* the GPU's weights from shared memory where they fit the static 48 KiB (a
	 * weight that is no kernel parameter: its evaluation, as on the host) */
	bool shared = m->opt.target == CG_TARGET_NVPTX && kb->buf[w->w->id] &&
		      w->V * ir_dtype_size(w->dt) == 16 &&
		      (int64_t)w->C * w->KH * w->KW * ir_dtype_size(w->dt) <= MM_SMEM_STATIC;
	for (int k = 0; k < 2; k++) {
		LLVMPositionBuilderAtEnd(w->b, k ? be : bv);
		if (k == 0 && shared)
			stage_weights(w);
		dw_loop(w, k == 0, wr, nw);
		LLVMBuildBr(w->b, bd);
	}
	LLVMPositionBuilderAtEnd(w->b, bd);
	return kb->failed ? -1 : 0;
}
