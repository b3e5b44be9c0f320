/* matmul_conv.c: conv2d as an implicit GEMM on the matmul tiles.
 *
 * An NCHW convolution is, per image n and group g, one matrix product:
 *   out[n][g*OCg + m][oh*OW + ow] = sum_k W[g*OCg + m][k] * X~[k][oh*OW + ow]
 * with k = (c, kh, kw) running over the group's Cg input channels and the window
 * (K = Cg*KH*KW), and X~[k][p] = X[n][g*Cg + c][oh*s - pad + kh*d][ow*s - pad + kw*d],
 * zero outside the input. So:
 *   - A is the weight seen as [OC][K], rows contiguous: copied like a matmul
 *     operand (16-byte chunks when K is a multiple of a chunk);
 *   - B is X~, never materialised: the stage load computes each element's address
 *     from its (k, p) and fills the padding with zeros (mm_conv_chunk; on the GPU
 *     the window origin of each column a thread copies is computed once per tile,
 *     mm_conv_tile_cols). A 1x1 conv of stride 1 without padding reads X[n] as the
 *     matrix [C][H*W] itself, chunk by chunk like any operand;
 *   - the output tile (m, p) of batch (n, g) is out[n][g*OCg + m][p]: rows of
 *     the GEMM are channels, columns the contiguous output plane, so the
 *     epilogue's stores are the matmul's (vectors where H*W allows) and the conv's
 *     epilogue (its bias, then what the Matmul fuser took: folded batch norm,
 *     residual, activation, cast) is evaluated at out's index (mm_conv_out_at).
 * The batches are images x groups; the tile loop (matmul_kernel.c), stages
 * (matmul_stage.c), compute (SIMT, mma.sync, wgmma), split-K and epilogue are the
 * matmul's, and its stage loads and epilogue call the hooks here: this room stands
 * below them, built on the primitives (matmul_tile.c) and the launch sizes
 * (matmul_shape.c) alone. Depthwise convs channels last have their own kernel
 * (matmul_depthwise.c); other convs with few output channels per group keep the
 * one-thread-per-output evaluator (kernel_join_window.c): their GEMM has too few
 * rows for a tile. */
#include <string.h>

#include "matmul.h"

static LLVMValueRef dim32(Mm *x, uint32_t id)
{
	return LLVMBuildTrunc(x->b, cg_dim(x->kb, id), x->kb->m->t_i32, "");
}

static LLVMValueRef c32(Mm *x, int64_t v)
{
	return LLVMConstInt(x->kb->m->t_i32, (unsigned long long)v, 1);
}

/* The window's size from the weight's KH axis wh (KW, KK: constants, the op's
 * (ir/infer.c), so the gather divides by constants), and whether the input must be
 * gathered: not for a 1x1 of stride 1 without padding (a 1x1 weight has size-1
 * dims, shape id 0 in the relative form). */
static void window_of(Mm *x, int wh)
{
	MmConv *cv = &x->cv;
	const RelAttrs *at = &x->op->attr;
	if (at->kernel[0] > 0 && at->kernel[1] > 0) {
		cv->KW = c32(x, at->kernel[1]);
		cv->KK = c32(x, (int64_t)at->kernel[0] * at->kernel[1]);
	} else {
		cv->KW = dim32(x, cv->w->shape[wh + 1]);
		cv->KK = mm_mul(x, dim32(x, cv->w->shape[wh]), cv->KW);
	}
	cv->gather = !mm_conv_in_place(x->op);
}

bool mm_conv_in_place(const RelOp *op)
{
	const RelTensor *w = &op->t[1];
	int wh = op->attr.layout == LAYOUT_NHWC ? 1 : 2;
	return w->shape[wh] == 0 && w->shape[wh + 1] == 0 && op->attr.stride[0] == 1 &&
	       op->attr.stride[1] == 1 && op->attr.padding[0] == 0 && op->attr.padding[1] == 0;
}

/* Channels last: x [N][H][W][C], the weight [OC][KH][KW][Cg], out [N][OH][OW][OC];
 * M = N*OH*OW rows (every image), N = OCg columns, one batch per group. */
static void setup_nhwc(Mm *x, int groups)
{
	CgKb *kb = x->kb;
	MmConv *cv = &x->cv;
	cv->nhwc = true;
	cv->gw = 0;
	cv->Cg = dim32(x, cv->w->shape[3]);
	cv->H = dim32(x, cv->x->shape[1]);
	cv->W = dim32(x, cv->x->shape[2]);
	cv->C = dim32(x, cv->x->shape[3]);
	cv->HW = mm_mul(x, cv->H, cv->W);
	cv->OH = dim32(x, x->to->shape[1]);
	cv->OW = dim32(x, x->to->shape[2]);
	cv->OCg = mm_udivc(x, dim32(x, x->to->shape[3]), groups);
	/* 1x1, stride 1, no padding: A is X itself, [N*H*W][C], at the group's channels */
	window_of(x, 1);
	x->M = mm_mul(x, mm_mul(x, cg_dim(kb, x->to->shape[0]), cg_dim(kb, x->to->shape[1])),
		      cg_dim(kb, x->to->shape[2]));
	x->N = mm_to64(x, cv->OCg);
	x->K = mm_to64(x, mm_mul(x, cv->Cg, cv->KK));
	x->src[0] = kb->buf[cv->x->id];
	x->src[1] = kb->buf[cv->w->id];
	/* A [M][K] (row stride C when read in place); B [K][OCg] read transposed: the
	 * weight's rows are its columns */
	x->ost[0][2] = mm_to64(x, cv->C);
	x->ost[0][3] = mm_i64c(x, 1);
	x->ost[1][2] = mm_i64c(x, 1);
	x->ost[1][3] = x->K;
	x->trans[0] = false;
	x->trans[1] = true;
}

void mm_conv_setup(Mm *x)
{
	CgKb *kb = x->kb;
	const RelOp *op = x->op;
	MmConv *cv = &x->cv;
	cv->x = &op->t[0];
	cv->w = &op->t[1];
	cv->bias = op->nin > 2 ? &op->t[2] : NULL;
	const RelAttrs *at = &op->attr;
	int groups = at->groups > 0 ? at->groups : 1;
	for (int i = 0; i < 2; i++) {
		cv->stride[i] = at->stride[i];
		cv->pad[i] = at->padding[i];
		cv->dil[i] = at->dilation[i];
	}
	cv->G = mm_i64c(x, groups);
	if (at->layout == LAYOUT_NHWC) {
		setup_nhwc(x, groups);
		return;
	}
	cv->gw = 1;
	cv->Cg = dim32(x, cv->w->shape[1]);
	cv->H = dim32(x, cv->x->shape[2]);
	cv->W = dim32(x, cv->x->shape[3]);
	cv->HW = mm_mul(x, cv->H, cv->W);
	cv->OW = dim32(x, x->to->shape[3]);
	cv->OCg = mm_udivc(x, dim32(x, x->to->shape[1]), groups);
	/* 1x1, stride 1, no padding: B is X[n] itself ([C][H*W]) */
	window_of(x, 2);

	x->M = mm_to64(x, cv->OCg);
	x->N = mm_mul(x, cg_dim(kb, x->to->shape[2]), cg_dim(kb, x->to->shape[3]));
	x->K = mm_to64(x, mm_mul(x, cv->Cg, cv->KK));
	/* A: the weight, [OC][K]; B: X~ [K][H*W] (strides used only when not
	 * gathered) */
	x->src[0] = kb->buf[cv->w->id];
	x->src[1] = kb->buf[cv->x->id];
	x->ost[0][2] = x->K;
	x->ost[0][3] = mm_i64c(x, 1);
	x->ost[1][2] = mm_to64(x, cv->HW);
	x->ost[1][3] = mm_i64c(x, 1);
	x->trans[0] = x->trans[1] = false;
}

/* Whether operand w's chunks may be copied whole: a 16-byte aligned buffer and
 * rows (and the batch offsets, multiples of them) of whole chunks. */
LLVMValueRef mm_conv_aligned16(Mm *x, int w)
{
	CgModule *m = x->kb->m;
	MmConv *cv = &x->cv;
	if (w == cv->gw && cv->gather && !cv->nhwc)
		return LLVMConstInt(m->t_i1, 0, 0);
	LLVMValueRef p = LLVMBuildPtrToInt(x->b, x->src[w], m->t_i64, "");
	LLVMValueRef ok = LLVMBuildICmp(x->b, LLVMIntEQ, mm_uremc(x, p, 16), mm_i64c(x, 0), "");
	/* the stride between the tile's rows (columns when transposed) */
	LLVMValueRef ld = x->ost[w][x->trans[w] ? 3 : 2];
	ok = LLVMBuildAnd(x->b, ok, LLVMBuildICmp(x->b, LLVMIntEQ, mm_uremc(x, ld, x->ce),
						  mm_i64c(x, 0), ""), "");
	if (cv->nhwc && w == 0)   /* and a group's channels start a chunk */
		ok = LLVMBuildAnd(x->b, ok, LLVMBuildICmp(x->b, LLVMIntEQ,
			mm_uremc(x, mm_to64(x, cv->Cg), x->ce), mm_i64c(x, 0), ""), "");
	return ok;
}

LLVMValueRef mm_conv_batches(Mm *x)
{
	if (x->cv.nhwc)
		return x->cv.G;
	return mm_mul(x, cg_dim(x->kb, x->to->shape[0]), x->cv.G);
}

/* batch f = n * G + g: bpos = (n, g); A at group g's rows, B at image n's group g;
 * channels last f = g: A at the group's first channel, B at its rows */
void mm_conv_batch(Mm *x, LLVMValueRef f)
{
	MmConv *cv = &x->cv;
	if (cv->nhwc) {
		x->bpos[0] = mm_i64c(x, 0);
		x->bpos[1] = f;
		x->base[0] = mm_mul(x, f, mm_to64(x, cv->Cg));
		x->base[1] = mm_mul(x, mm_mul(x, f, mm_to64(x, cv->OCg)), x->K);
		return;
	}
	LLVMValueRef n = LLVMBuildUDiv(x->b, f, cv->G, ""), g = LLVMBuildURem(x->b, f, cv->G, "");
	x->bpos[0] = n;
	x->bpos[1] = g;
	x->base[0] = mm_mul(x, mm_mul(x, g, mm_to64(x, cv->OCg)), x->K);
	LLVMValueRef plane = mm_to64(x, cv->HW);
	LLVMValueRef c = mm_add(x, mm_mul(x, n, cg_dim(x->kb, cv->x->shape[1])),
				mm_mul(x, g, mm_to64(x, cv->Cg)));
	x->base[1] = mm_mul(x, c, plane);
}

/* The window origin of output column p (i64): (oh*s - pad, ow*s - pad) in the
 * input (i32), and whether p < N. */
static void col_origin(Mm *x, LLVMValueRef p, LLVMValueRef *ih0, LLVMValueRef *iw0,
		       LLVMValueRef *pok)
{
	MmConv *cv = &x->cv;
	LLVMValueRef p32 = LLVMBuildTrunc(x->b, mm_min64(x, p, x->N), x->kb->m->t_i32, "");
	LLVMValueRef oh = mm_bin(x, LLVMUDiv, p32, cv->OW), ow = mm_bin(x, LLVMURem, p32, cv->OW);
	*ih0 = mm_addc(x, mm_mulc(x, oh, cv->stride[0]), -cv->pad[0]);
	*iw0 = mm_addc(x, mm_mulc(x, ow, cv->stride[1]), -cv->pad[1]);
	*pok = mm_lt(x, p, x->N);
}

/* Channels last: the origin of output row m (i64; pixel (n, oh, ow)): the offset of
 * image n in the input, and the window's corner (oh*s - pad, ow*s - pad); a row
 * past M gets a corner far outside, so that every element of it reads zero. */
static void row_origin(Mm *x, LLVMValueRef m, LLVMValueRef *base, LLVMValueRef *ih0,
		       LLVMValueRef *iw0)
{
	MmConv *cv = &x->cv;
	CgModule *cm = x->kb->m;
	LLVMValueRef in = mm_lt(x, m, x->M);
	LLVMValueRef plane = mm_to64(x, mm_mul(x, cv->OH, cv->OW));
	LLVMValueRef mc = mm_min64(x, m, x->M);
	LLVMValueRef n = LLVMBuildUDiv(x->b, mc, plane, "");
	LLVMValueRef p32 = LLVMBuildTrunc(x->b, LLVMBuildURem(x->b, mc, plane, ""), cm->t_i32, "");
	LLVMValueRef oh = mm_bin(x, LLVMUDiv, p32, cv->OW), ow = mm_bin(x, LLVMURem, p32, cv->OW);
	*base = mm_mul(x, n, mm_mul(x, mm_to64(x, cv->HW), mm_to64(x, cv->C)));
	*ih0 = LLVMBuildSelect(x->b, in, mm_addc(x, mm_mulc(x, oh, cv->stride[0]), -cv->pad[0]),
			       c32(x, INT32_MIN / 2), "");
	*iw0 = mm_addc(x, mm_mulc(x, ow, cv->stride[1]), -cv->pad[1]);
}

void mm_conv_tile_cols(Mm *x)
{
	MmConv *cv = &x->cv;
	cv->cols = false;
	if (!x->gpu || !cv->gather)
		return;
	if (cv->nhwc) {
		/* A's chunk rows this thread copies: tid / cpr + i * (NTHR / cpr), NTHR
		 * the copying threads (Mm.nthr) */
		int nthr = x->nthr ? x->nthr : MM_THREADS;
		int cpr = x->cpr[0], per = x->c->bm * cpr / nthr;
		LLVMValueRef r0 = mm_udivc(x, mm_to_ot(x, x->tid), cpr);
		for (int i = 0; i < per && i < 8; i++) {
			LLVMValueRef r = mm_addc(x, r0, (int64_t)i * (nthr / cpr));
			row_origin(x, mm_add(x, x->m0, mm_to64(x, r)), &cv->rbase[i], &cv->ih0[i],
				   &cv->iw0[i]);
		}
		cv->cols = per <= 8;
		return;
	}
	LLVMValueRef ch = mm_uremc(x, mm_to_ot(x, x->tid), x->cpr[1]);
	LLVMValueRef p0 = mm_add(x, x->n0, mm_to64(x, mm_mulc(x, ch, x->ce)));
	for (int e = 0; e < x->ce; e++)
		col_origin(x, mm_addc(x, p0, e), &cv->ih0[e], &cv->iw0[e], &cv->pok[e]);
	cv->cols = true;
}

LLVMValueRef mm_conv_chunk(Mm *x, LLVMValueRef k, LLVMValueRef p)
{
	CgModule *m = x->kb->m;
	MmConv *cv = &x->cv;
	LLVMTypeRef rt = mm_raw_type(x);
	/* the row: k = (c, kh, kw), in i32 (below 2^31: it indexes one window) */
	LLVMValueRef k32 = LLVMBuildTrunc(x->b, mm_min64(x, k, x->K), m->t_i32, "");
	LLVMValueRef c = mm_bin(x, LLVMUDiv, k32, cv->KK), r = mm_bin(x, LLVMURem, k32, cv->KK);
	LLVMValueRef kh = mm_mulc(x, mm_bin(x, LLVMUDiv, r, cv->KW), cv->dil[0]);
	LLVMValueRef kw = mm_mulc(x, mm_bin(x, LLVMURem, r, cv->KW), cv->dil[1]);
	LLVMValueRef kok = mm_lt(x, k, x->K);
	/* the image's group's channel c, from a pointer to it */
	LLVMValueRef plane = mm_add(x, x->base[1], mm_mul(x, mm_to64(x, c), mm_to64(x, cv->HW)));
	LLVMValueRef src = LLVMBuildGEP2(x->b, rt, x->src[1], &plane, 1, "");
	LLVMValueRef vec = LLVMConstNull(LLVMVectorType(rt, (unsigned)x->ce));
	for (int e = 0; e < x->ce; e++) {
		LLVMValueRef ih0, iw0, pok;
		if (cv->cols) {
			/* GPU: p is this thread's column (mm_conv_tile_cols) */
			ih0 = cv->ih0[e];
			iw0 = cv->iw0[e];
			pok = cv->pok[e];
		} else {
			col_origin(x, mm_addc(x, p, e), &ih0, &iw0, &pok);
		}
		LLVMValueRef ih = mm_add(x, ih0, kh), iw = mm_add(x, iw0, kw);
		/* 0 <= ih < H and 0 <= iw < W, as unsigned compares */
		LLVMValueRef ok = LLVMBuildAnd(x->b, LLVMBuildICmp(x->b, LLVMIntULT, ih, cv->H, ""),
					       LLVMBuildICmp(x->b, LLVMIntULT, iw, cv->W, ""), "");
		ok = LLVMBuildAnd(x->b, ok, LLVMBuildAnd(x->b, kok, pok, ""), "");
		LLVMValueRef o = LLVMBuildSelect(x->b, ok, mm_add(x, mm_mul(x, ih, cv->W), iw),
						 c32(x, 0), "");
		LLVMValueRef v = LLVMBuildLoad2(x->b, rt, LLVMBuildGEP2(x->b, rt, src, &o, 1, ""), "");
		LLVMSetAlignment(v, (unsigned)x->es);
		v = LLVMBuildSelect(x->b, ok, v, LLVMConstNull(rt), "");
		vec = LLVMBuildInsertElement(x->b, vec, v, mm_i32c(x, e), "");
	}
	return vec;
}

/* Channels last: k = (kh, kw, c) of the group's window as (c, kh, kw) (i32), and
 * whether k < K. */
static void k_split(Mm *x, LLVMValueRef k, LLVMValueRef *c, LLVMValueRef *kh, LLVMValueRef *kw,
		    LLVMValueRef *kok)
{
	MmConv *cv = &x->cv;
	LLVMValueRef k32 = LLVMBuildTrunc(x->b, mm_min64(x, k, x->K), x->kb->m->t_i32, "");
	LLVMValueRef q = mm_bin(x, LLVMUDiv, k32, cv->Cg);
	*c = LLVMBuildSub(x->b, k32, mm_mul(x, q, cv->Cg), "");
	*kh = mm_bin(x, LLVMUDiv, q, cv->KW);
	*kw = mm_bin(x, LLVMURem, q, cv->KW);
	*kok = mm_lt(x, k, x->K);
}

/* The k after (c, kh, kw): the next channel, carried into the window's column and
 * row (no division) */
static void k_next(Mm *x, LLVMValueRef *c, LLVMValueRef *kh, LLVMValueRef *kw)
{
	MmConv *cv = &x->cv;
	LLVMValueRef n = mm_addc(x, *c, 1);
	LLVMValueRef wrap = LLVMBuildICmp(x->b, LLVMIntEQ, n, cv->Cg, "");
	*c = LLVMBuildSelect(x->b, wrap, mm_i32c(x, 0), n, "");
	n = mm_add(x, *kw, LLVMBuildZExt(x->b, wrap, x->kb->m->t_i32, ""));
	wrap = LLVMBuildICmp(x->b, LLVMIntEQ, n, cv->KW, "");
	*kw = LLVMBuildSelect(x->b, wrap, mm_i32c(x, 0), n, "");
	*kh = mm_add(x, *kh, LLVMBuildZExt(x->b, wrap, x->kb->m->t_i32, ""));
}

/* The input offset (i64) of channel c at the window offset (dh, dw) of the row
 * whose origin is (base, ih0, iw0), and whether it lies inside the input. */
static LLVMValueRef window_at(Mm *x, LLVMValueRef base, LLVMValueRef ih0, LLVMValueRef iw0,
			      LLVMValueRef c, LLVMValueRef dh, LLVMValueRef dw, LLVMValueRef *ok)
{
	MmConv *cv = &x->cv;
	LLVMValueRef ih = mm_add(x, ih0, dh), iw = mm_add(x, iw0, dw);
	*ok = LLVMBuildAnd(x->b, LLVMBuildICmp(x->b, LLVMIntULT, ih, cv->H, ""),
			   LLVMBuildICmp(x->b, LLVMIntULT, iw, cv->W, ""), "");
	LLVMValueRef pix = mm_to64(x, mm_add(x, mm_mul(x, ih, cv->W), iw));
	LLVMValueRef at = mm_add(x, mm_add(x, base, x->base[0]),
				 mm_add(x, mm_mul(x, pix, mm_to64(x, cv->C)), mm_to64(x, c)));
	return LLVMBuildSelect(x->b, *ok, at, mm_i64c(x, 0), "");
}

void mm_conv_load_a(Mm *x, int i, LLVMValueRef m, LLVMValueRef k, LLVMValueRef doff,
		    LLVMValueRef dst, bool whole)
{
	CgModule *cm = x->kb->m;
	MmConv *cv = &x->cv;
	LLVMTypeRef rt = mm_raw_type(x);
	LLVMValueRef base, ih0, iw0;
	if (cv->cols) {
		base = cv->rbase[i];
		ih0 = cv->ih0[i];
		iw0 = cv->iw0[i];
	} else {
		row_origin(x, m, &base, &ih0, &iw0);
	}
	if (whole) {
		/* the group's channels come in whole chunks: one (kh, kw) for the chunk,
		 * its ce channels contiguous in the input */
		LLVMValueRef c, dh, dw, kok, ok;
		k_split(x, k, &c, &dh, &dw, &kok);
		dh = mm_mulc(x, dh, cv->dil[0]);
		dw = mm_mulc(x, dw, cv->dil[1]);
		LLVMValueRef at = window_at(x, base, ih0, iw0, c, dh, dw, &ok);
		ok = LLVMBuildAnd(x->b, ok, kok, "");
		at = LLVMBuildSelect(x->b, kok, at, mm_i64c(x, 0), "");
		LLVMValueRef src = LLVMBuildGEP2(x->b, rt, x->src[0], &at, 1, "");
		if (x->gpu) {
			LLVMValueRef args[3] = {mm_saddr(x, doff), src,
				LLVMBuildSelect(x->b, ok, mm_i32c(x, 16), mm_i32c(x, 0), "")};
			mm_asm_call(x, cm->t_void, "cp.async.cg.shared.global [$0], [$1], 16, $2;",
				    "r,l,r,~{memory}", args, 3);
		} else {
			LLVMTypeRef vt = LLVMVectorType(cm->t_i32, 4);
			LLVMValueRef v = LLVMBuildLoad2(x->b, vt, src, "");
			LLVMSetAlignment(v, 16);
			v = LLVMBuildSelect(x->b, ok, v, LLVMConstNull(vt), "");
			LLVMSetAlignment(LLVMBuildStore(x->b, v, dst), 16);
		}
		return;
	}
	/* element by element: k split once, then stepped */
	LLVMValueRef vec = LLVMConstNull(LLVMVectorType(rt, (unsigned)x->ce));
	LLVMValueRef c, kh, kw, kok;
	k_split(x, k, &c, &kh, &kw, &kok);
	for (int e = 0; e < x->ce; e++) {
		LLVMValueRef ok;
		if (e > 0) {
			k_next(x, &c, &kh, &kw);
			kok = mm_lt(x, mm_addc(x, k, e), x->K);
		}
		LLVMValueRef at = window_at(x, base, ih0, iw0, c, mm_mulc(x, kh, cv->dil[0]),
					    mm_mulc(x, kw, cv->dil[1]), &ok);
		ok = LLVMBuildAnd(x->b, ok, kok, "");
		at = LLVMBuildSelect(x->b, ok, at, mm_i64c(x, 0), "");
		LLVMValueRef v = LLVMBuildLoad2(x->b, rt, LLVMBuildGEP2(x->b, rt, x->src[0], &at, 1, ""), "");
		LLVMSetAlignment(v, (unsigned)x->es);
		v = LLVMBuildSelect(x->b, ok, v, LLVMConstNull(rt), "");
		vec = LLVMBuildInsertElement(x->b, vec, v, mm_i32c(x, e), "");
	}
	LLVMSetAlignment(LLVMBuildStore(x->b, vec, dst), 16);
}

void mm_conv_out_at(Mm *x, LLVMValueRef gr, LLVMValueRef gc, CgIdx *at)
{
	MmConv *cv = &x->cv;
	CgModule *m = x->kb->m;
	*at = cg_idx_of(x->rank, x->to->shape);
	at->has_dims = true;
	if (cv->nhwc) {
		/* row gr is pixel (n, oh, ow), column gc channel g*OCg + gc: the flat
		 * index gr*OC + channel; the divisions stay for reads that need them */
		LLVMValueRef oc = mm_to64(x, mm_mul(x, cv->OCg, LLVMBuildTrunc(x->b, cv->G, m->t_i32, "")));
		at->i[3] = mm_add(x, mm_mul(x, x->bpos[1], mm_to64(x, cv->OCg)), gc);
		at->flat = mm_add(x, mm_mul(x, gr, oc), at->i[3]);
		LLVMValueRef plane = mm_to64(x, mm_mul(x, cv->OH, cv->OW));
		at->i[0] = LLVMBuildUDiv(x->b, gr, plane, "");
		LLVMValueRef p32 = LLVMBuildTrunc(x->b, LLVMBuildURem(x->b, gr, plane, ""), m->t_i32, "");
		at->i[1] = LLVMBuildZExt(x->b, LLVMBuildUDiv(x->b, p32, cv->OW, ""), m->t_i64, "");
		at->i[2] = LLVMBuildZExt(x->b, LLVMBuildURem(x->b, p32, cv->OW, ""), m->t_i64, "");
		return;
	}
	at->i[0] = x->bpos[0];
	at->i[1] = mm_add(x, mm_mul(x, x->bpos[1], mm_to64(x, cv->OCg)), gr);
	/* the flat index too: tensors of out's shape (a residual) read at it, and the
	 * divisions below are left for broadcast reads that need them (in i32: gc
	 * indexes one plane) */
	LLVMValueRef row = mm_add(x, mm_mul(x, at->i[0], cg_dim(x->kb, x->to->shape[1])), at->i[1]);
	at->flat = mm_add(x, mm_mul(x, row, x->N), gc);
	LLVMValueRef g32 = LLVMBuildTrunc(x->b, gc, m->t_i32, "");
	at->i[2] = LLVMBuildZExt(x->b, LLVMBuildUDiv(x->b, g32, cv->OW, ""), m->t_i64, "");
	at->i[3] = LLVMBuildZExt(x->b, LLVMBuildURem(x->b, g32, cv->OW, ""), m->t_i64, "");
}

LLVMValueRef mm_conv_value(Mm *x, const CgIdx *at, LLVMValueRef v)
{
	const RelTensor *b = x->cv.bias;
	if (!b)
		return v;
	LLVMValueRef pos[IR_MAX_RANK];
	LLVMValueRef ch = at->i[x->cv.nhwc ? 3 : 1];
	for (int d = 0; d < b->rank; d++)
		pos[d] = b->shape[d] == 0 ? mm_i64c(x, 0) : ch;
	CgIdx bi = cg_idx_at(b, pos);
	LLVMValueRef bv = cg_eval(x->kb, b->id, &bi);
	return LLVMBuildFAdd(x->b, v, cg_convert(x->kb, bv, (DType)b->dtype, DT_F32), "");
}

/* ---- picking and launching (matmul_pick.c asks) ---- */

bool mm_conv_eligible(const RelOp *op)
{
	DType t = (DType)op->t[0].dtype;
	if (t != DT_F16 && t != DT_BF16 && t != DT_F32)
		return false;
	if (op->t[1].dtype != t || op->t[0].rank != 4 || op->t[1].rank != 4 ||
	    op->t[op->nin].rank != 4)
		return false;
	if (op->nin > 2 && !ir_dtype_is_float((DType)op->t[2].dtype))
		return false;
	for (int i = 0; i < 2; i++)
		if (op->attr.stride[i] < 1 || op->attr.dilation[i] < 1 || op->attr.padding[i] < 0)
			return false;
	return true;
}

void mm_conv_sizes(const RelOp *op, const int64_t *dims, int ndims, int64_t *batch,
		   int64_t *m, int64_t *n, int64_t *k)
{
	const RelTensor *w = &op->t[1], *o = &op->t[op->nin];
	int64_t g = op->attr.groups > 0 ? op->attr.groups : 1;
	*k = mm_dim_of(w->shape[1], dims, ndims) * mm_dim_of(w->shape[2], dims, ndims) *
	     mm_dim_of(w->shape[3], dims, ndims);
	if (op->attr.layout == LAYOUT_NHWC) {
		*batch = g;
		*m = mm_dim_of(o->shape[0], dims, ndims) * mm_dim_of(o->shape[1], dims, ndims) *
		     mm_dim_of(o->shape[2], dims, ndims);
		*n = mm_dim_of(o->shape[3], dims, ndims) / g;
		return;
	}
	*batch = mm_dim_of(o->shape[0], dims, ndims) * g;
	*m = mm_dim_of(o->shape[1], dims, ndims) / g;
	*n = mm_dim_of(o->shape[2], dims, ndims) * mm_dim_of(o->shape[3], dims, ndims);
}

/* The launch: launch_rule.c's conv_rule (shared with the runtime), whose arg[]
 * is written here: BM, BN, the shape ids of the output's four dims, the groups,
 * the dynamic shared bytes, the split, the bytes of one block's partial, the
 * layout. */
void mm_conv_launch(const MmConfig *c, const RelOp *op, CgLaunch *l)
{
	const RelTensor *o = &op->t[op->nin];
	l->rule = CG_RULE_CONV;
	l->arg[0] = c->bm;
	l->arg[1] = c->bn;
	for (int d = 0; d < 4; d++)
		l->arg[2 + d] = o->shape[d];
	l->arg[6] = op->attr.groups > 0 ? op->attr.groups : 1;
	int smem = mm_smem(c, ir_dtype_size((DType)op->t[0].dtype));
	l->arg[7] = smem > MM_SMEM_STATIC ? smem : 0;
	l->arg[8] = c->split > 1 ? c->split : 0;
	l->arg[9] = c->split > 1 ? mm_partial_bytes(c) : 0;
	l->arg[10] = op->attr.layout;
	/* warp-specialized: a block per SM, each looping over the tiles */
	if (c->ws) {
		l->block = MM_WS_THREADS;
		l->arg[11] = CG_MM_PERSIST;
	}
}

/* The TMA map of operand id of a conv channels last in one group: the input
 * [N*H*W][C] (id 0) or the weight [OC][KH*KW*C] (id 1), both K-major, dims
 * innermost first, the box a 128-byte panel of the stage's tile (as mm_tmap's).
 * The input's map is what a conv read in place (a 1x1 window of stride 1 without
 * padding) copies; a gathered one's copiers read its windows by cp.async
 * (matmul_ws.c) in whole 16-byte chunks of channels, and the map, unused by the
 * kernel, holds the input to TMA's alignment where the runtime binds it. Only at
 * a plan's own sizes: N*H*W is no one shape id, so a plan for every size could not
 * write the map's dims. */
bool mm_conv_tmap(const RelOp *op, const MmConfig *c, int id, const int64_t *dims, int ndims,
		  int *tensor, CgTmap *tm)
{
	if (id < 0 || id > 1 || op->attr.layout != LAYOUT_NHWC || op->attr.groups > 1)
		return false;
	const RelTensor *t = &op->t[id];
	int es = ir_dtype_size((DType)t->dtype);
	bool whole = mm_dim_of(op->t[0].shape[3], dims, ndims) % (16 / es) == 0;
	if (es * 64 != 128 || (!mm_conv_in_place(op) && !whole))
		return false;
	memset(tm, 0, sizeof *tm);
	tm->es = es;
	tm->rank = 2;
	int64_t a = mm_dim_of(t->shape[0], dims, ndims), b = mm_dim_of(t->shape[1], dims, ndims);
	int64_t cc = mm_dim_of(t->shape[2], dims, ndims), d = mm_dim_of(t->shape[3], dims, ndims);
	/* the input: pixels by channels; the weight: channels by window and channels */
	tm->dim[0] = id == 0 ? d : b * cc * d;
	tm->dim[1] = id == 0 ? a * b * cc : a;
	tm->dim_id[0] = id == 0 ? (int)t->shape[3] : -1;
	tm->dim_id[1] = -1;
	tm->stride[1] = tm->dim[0] * es;
	tm->box[0] = 128 / es;
	tm->box[1] = id == 0 ? c->bm : c->bn;
	if (tm->dim[0] < 1 || tm->dim[1] < 1 || tm->dim[1] > ((int64_t)1 << 32) ||
	    tm->stride[1] % 16 || tm->stride[1] >= ((int64_t)1 << 40))
		return false;
	*tensor = t->id;
	return true;
}
