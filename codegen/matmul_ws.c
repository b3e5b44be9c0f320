/* matmul_ws.c: the warp-specialized, persistent tile loop of the wgmma
 * configurations `wg...ws` (sm_90a, on the GPU; the host runs their tiles as the
 * plain wgmma loop of matmul_kernel.c: the same tiles, stages and reduction order).
 *
 * The block has MM_WS_THREADS threads: warpgroups 0 and 1 multiply (each its 64
 * rows of the tile, as in matmul_wgmma.c), warpgroup 2 copies, by TMA: one of its
 * threads issues every copy, the others leave at once. The grid is at most one
 * block per SM (CG_MM_PERSIST); every block walks the same tiles as the plain loop
 * would, t = block, block + nblocks, ..., and both roles walk them in step. The K
 * steps of all the block's tiles form one sequence j = 0, 1, ...; step j fills
 * stage j % STAGES, so the stage ring runs on across tiles:
 *   - two mbarriers a stage in shared memory after the epilogue's region: full[s]
 *     (one arrival, the copier's, which also sets the bytes the stage's copies
 *     bring: they complete the phase as they land) and empty[s] (MM_THREADS
 *     arrivals: every multiplying thread, once the wgmma that read it completed).
 *     Round r = j / STAGES of stage s waits for phase parity r & 1 of full[s]
 *     (multiplying) and (r & 1) ^ 1 of empty[s] (copying: in round 0 that is the
 *     phase before the first, complete at init);
 *   - the copier waits for step j's stage to be empty, arrives on its full[] with
 *     the stage's bytes, and issues a `cp.async.bulk.tensor` per 128-byte panel of
 *     each operand's tile (mm_swz's layout is the map's 128-byte swizzle; parts of
 *     the box outside the operand arrive as zeros, so edges need nothing else). The
 *     maps are the kernel's CG_PARAM_TMAP parameters, which the runtime encodes
 *     from the launch's "tmap" arguments (cg_matmul_tmap). So the copier runs up to
 *     STAGES steps ahead, over a tile's end: the next tile's first stages load
 *     while the multiplying warpgroups run the epilogue;
 *   - the multipliers wait for full[] of step j, issue its wgmma group, wait until
 *     only it is in flight (so step j - 1's group is done) and arrive on step
 *     j - 1's empty[]; at a tile's end they wait for all and free the last. Then
 *     the epilogue, staged through its own region (Mm.epi_base) with the named
 *     barrier of their 256 threads (Mm.wsbar).
 * Registers: the copying warpgroup gives its registers back (setmaxnreg) to the
 * multiplying ones, whose accumulators (128 a thread for 128x256) then fit.
 *
 * Convs channels last in one group (matmul_conv.c): one read in place is a plain
 * matmul to this loop, both operands by TMA. A gathered one (a 3x3 window, a
 * stride) has its weight's tile copied by TMA as above, and its input's window
 * gathered by the whole copying warpgroup (Mm.nthr = 128, each thread holding its
 * rows' window origins: setmaxnreg 72 / 216) in 16-byte chunks by cp.async, each
 * thread arriving on full[] once its copies landed
 * (`cp.async.mbarrier.arrive.noinc`: full[] counts 1 + 128 arrivals); the
 * multipliers fence those copies (generic proxy) before wgmma reads them (async
 * proxy).
 *
 * Clusters (MmConfig.cluster = 2, launched with a cluster of two blocks: the
 * kernel's "cluster" in the plan): the blocks of a cluster take the tiles of a
 * pair p = cluster, cluster + nclusters, ... of side-by-side tiles in a row of
 * tiles (tile columns 2q and 2q + 1; a pair past the last column computes
 * nothing it stores), so they read the same A tile. Rank r's copier loads half
 * of it (rows r*BM/2.. of a K-major A, whose map's box is BM/2 rows; panel r of
 * an M-major one) into the same offset of both blocks' stage and completes both
 * blocks' full[] (multicast); its B tile only into its own. A stage then may be
 * refilled only when both blocks' multipliers are done with it: empty[s] counts
 * an arrival of each multiplying warp of both blocks (lane 0, once the warp's
 * wgmma group completed, on its own block's and on the other's). The arrivals
 * and the copier's wait keep the default (CTA) scope: they order no data, only
 * the stage's reuse, and with .release.cluster / .acquire.cluster the kernel ran
 * three times slower (docs/benchmarks.md, session 53). The mbarriers are
 * initialised before either block copies (a cluster barrier after the init), and
 * neither block leaves before the other is done arriving on its barriers (a
 * cluster barrier at the end). */
#include "matmul.h"

/* ---- mbarriers (32-bit shared addresses) ------------------------------------- */

void mm_mbar_init(Mm *x, LLVMValueRef a, int count)
{
	LLVMValueRef args[2] = {a, mm_i32c(x, count)};
	mm_asm_call(x, x->kb->m->t_void, "mbarrier.init.shared::cta.b64 [$0], $1;",
		    "r,r,~{memory}", args, 2);
}

void mm_mbar_arrive(Mm *x, LLVMValueRef a)
{
	mm_asm_call(x, x->kb->m->t_void, "mbarrier.arrive.shared::cta.b64 _, [$0];",
		    "r,~{memory}", &a, 1);
}

/* Wait until the phase of parity `parity` (i32) of the mbarrier at a completed. */
void mm_mbar_wait(Mm *x, LLVMValueRef a, LLVMValueRef parity)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	LLVMBasicBlockRef spin = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "mbar.wait");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "mbar.done");
	LLVMBuildBr(x->b, spin);
	LLVMPositionBuilderAtEnd(x->b, spin);
	LLVMValueRef args[2] = {a, parity};
	LLVMValueRef ok = mm_asm_call(x, m->t_i32,
		"{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
		"selp.u32 $0, 1, 0, p; }", "=r,r,r,~{memory}", args, 2);
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntNE, ok, mm_i32c(x, 0), ""), done, spin);
	LLVMPositionBuilderAtEnd(x->b, done);
}

/* A stage's release in a cluster: lane 0 of the warp arrives on the mbarrier at
 * offset a of both blocks (the warp's wgmma group completed: every lane is done). */
static void mbar_arrive_both(Mm *x, LLVMValueRef a, LLVMValueRef lane)
{
	LLVMValueRef args[2] = {a, LLVMBuildTrunc(x->b, lane, x->kb->m->t_i32, "")};
	mm_asm_call(x, x->kb->m->t_void,
		    "{ .reg .pred p; .reg .b32 ra; setp.eq.u32 p, $1, 0; "
		    "@p mapa.shared::cluster.u32 ra, $0, 0; "
		    "@p mbarrier.arrive.shared::cluster.b64 _, [ra]; "
		    "@p mapa.shared::cluster.u32 ra, $0, 1; "
		    "@p mbarrier.arrive.shared::cluster.b64 _, [ra]; }",
		    "r,r,~{memory}", args, 2);
}

/* Every thread of both blocks of the cluster meets here (those that left do not
 * count). */
static void cluster_sync(Mm *x)
{
	mm_asm_call(x, x->kb->m->t_void, "barrier.cluster.arrive.release; barrier.cluster.wait.acquire;",
		    "~{memory}", NULL, 0);
}

/* ---- the step sequence -------------------------------------------------------- */

typedef struct {
	LLVMValueRef jslot;       /* i32 alloca: the next step of the sequence */
	int bars;                 /* byte offset of full[0]; empty[s] STAGES later */
	LLVMValueRef g;           /* ping-pong: the multiplying warpgroup (i64 0 or 1) */
	LLVMValueRef rank;        /* cluster: the block's rank in it (i64), else NULL */
	LLVMValueRef lane;        /* cluster, multiplying: the thread's lane (i64) */
	bool gather;              /* a conv whose input's windows the whole copying
				     warpgroup gathers (Mm.nthr), the weight by TMA */
} Ws;

static LLVMValueRef entry_alloca(Mm *x, LLVMTypeRef t)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(x->kb->m->ctx);
	LLVMBasicBlockRef e = LLVMGetEntryBasicBlock(x->kb->fn);
	LLVMValueRef first = LLVMGetFirstInstruction(e);
	if (first)
		LLVMPositionBuilderBefore(b, first);
	else
		LLVMPositionBuilderAtEnd(b, e);
	LLVMValueRef a = LLVMBuildAlloca(b, t, "ws.j");
	LLVMDisposeBuilder(b);
	return a;
}

/* The shared address of full[] (empty: false) or empty[] of step j's stage. */
static LLVMValueRef bar_of(Mm *x, const Ws *w, LLVMValueRef j, bool empty)
{
	LLVMValueRef s = LLVMBuildURem(x->b, j, mm_i32c(x, x->c->stages), "");
	LLVMValueRef off = mm_addc(x, mm_mulc(x, s, 8), w->bars + (empty ? x->c->stages * 8 : 0));
	return mm_saddr(x, off);
}

/* The parity of step j's round, flipped (the copiers' wait on empty[]) or not. */
static LLVMValueRef parity_of(Mm *x, LLVMValueRef j, bool flip)
{
	LLVMValueRef r = LLVMBuildUDiv(x->b, j, mm_i32c(x, x->c->stages), "");
	r = LLVMBuildAnd(x->b, r, mm_i32c(x, 1), "");
	return flip ? LLVMBuildXor(x->b, r, mm_i32c(x, 1), "") : r;
}

/* The byte offset (ot) of step j's stage. */
static LLVMValueRef stage_of(Mm *x, LLVMValueRef j)
{
	LLVMValueRef s = LLVMBuildURem(x->b, j, mm_i32c(x, x->c->stages), "");
	return mm_mulc(x, s, x->stage_bytes);
}

void mm_mbar_expect(Mm *x, LLVMValueRef a, int bytes)
{
	LLVMValueRef args[2] = {a, mm_i32c(x, bytes)};
	mm_asm_call(x, x->kb->m->t_void,
		    "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}",
		    args, 2);
}

/* The tensor map of the current tile's second operand: the matmul's, or among
 * alike siblings the tile's (Mm.grt). */
static LLVMValueRef map_b(Mm *x)
{
	CgKb *kb = x->kb;
	LLVMValueRef v = kb->tmap[1];
	for (int g = 1; g < x->ngroup && x->grt; g++) {
		LLVMValueRef is = LLVMBuildICmp(x->b, LLVMIntEQ, x->grt, mm_i64c(x, g), "");
		v = LLVMBuildSelect(x->b, is, kb->tmap[1 + g], v, "");
	}
	return v;
}

/* The coordinates of operand w's tile at K step kt in its tensor map, innermost
 * first, from co[1] on (co[0], the innermost, is left to the caller: in); their
 * count. */
static int tma_coords(Mm *x, int w, LLVMValueRef kt, LLVMValueRef *in, LLVMValueRef *co)
{
	CgModule *m = x->kb->m;
	const RelTensor *t = w ? x->tb : x->ta;
	LLVMValueRef k0 = LLVMBuildTrunc(x->b, mm_mulc(x, kt, x->c->bk), m->t_i32, "");
	LLVMValueRef m0 = LLVMBuildTrunc(x->b, x->m0, m->t_i32, "");
	LLVMValueRef n0 = LLVMBuildTrunc(x->b, x->n0, m->t_i32, "");
	LLVMValueRef row = w ? k0 : m0, col = w ? n0 : k0;
	*in = x->trans[w] ? row : col;
	co[1] = x->trans[w] ? col : row;
	int n = 2;
	for (int d = x->rank - 3; d >= 0 && n < CG_TMAP_MAXRANK && !x->is_conv; d--)
		if (t->shape[d] != 0)
			co[n++] = LLVMBuildTrunc(x->b, mm_batch_pos(x, w, d), m->t_i32, "");
	return n;
}

/* Operand w's tile at K step kt, every 128-byte panel of it, from memory into L2
 * (cp.async.bulk.prefetch.tensor): a hint, which touches no shared memory and no
 * barrier. */
static void tma_prefetch(Mm *x, int w, LLVMValueRef kt)
{
	CgModule *m = x->kb->m;
	LLVMValueRef co[CG_TMAP_MAXRANK], in;
	int n = tma_coords(x, w, kt, &in, co);
	char text[200], cons[64];
	int at = snprintf(text, sizeof text, "cp.async.bulk.prefetch.tensor.%dd.L2.global.tile [$0, {", n);
	for (int k = 0; k < n; k++)
		at += snprintf(text + at, sizeof text - (size_t)at, "%s$%d", k ? ", " : "", 1 + k);
	snprintf(text + at, sizeof text - (size_t)at, "}];");
	at = snprintf(cons, sizeof cons, "l");
	for (int k = 0; k < n; k++)
		at += snprintf(cons + at, sizeof cons - (size_t)at, ",r");
	snprintf(cons + at, sizeof cons - (size_t)at, ",~{memory}");
	LLVMValueRef args[1 + CG_TMAP_MAXRANK];
	args[0] = w ? map_b(x) : x->kb->tmap[0];
	for (int k = 1; k < n; k++)
		args[1 + k] = co[k];
	for (int q = 0; q < x->cpr[w] / 8; q++) {
		args[1] = LLVMBuildAdd(x->b, in, mm_i32c(x, q * 64), "");
		mm_asm_call(x, m->t_void, text, cons, args, 1 + n);
	}
}

void mm_tma_tile(Mm *x, int w, LLVMValueRef map, LLVMValueRef rank, LLVMValueRef so,
		 LLVMValueRef kt, LLVMValueRef bar)
{
	CgModule *m = x->kb->m;
	LLVMValueRef args[3 + CG_TMAP_MAXRANK], co[CG_TMAP_MAXRANK], in;
	int n = tma_coords(x, w, kt, &in, co);
	LLVMValueRef out = co[1];
	for (int k = 2; k < n; k++)
		args[3 + k] = co[k];
	args[1] = map ? map : w ? map_b(x) : x->kb->tmap[0];
	args[2] = bar;
	args[4] = out;
	bool multi = w == 0 && rank;
	char text[320], cons[64];
	int at = snprintf(text, sizeof text, "cp.async.bulk.tensor.%dd.shared::cluster.global.tile."
			  "mbarrier::complete_tx::bytes%s [$0], [$1, {", n,
			  multi ? ".multicast::cluster" : "");
	for (int k = 0; k < n; k++)
		at += snprintf(text + at, sizeof text - (size_t)at, "%s$%d", k ? ", " : "", 3 + k);
	if (multi)
		snprintf(text + at, sizeof text - (size_t)at, "}], [$2], $%d;", 3 + n);
	else
		snprintf(text + at, sizeof text - (size_t)at, "}], [$2];");
	at = snprintf(cons, sizeof cons, "r,l,r");
	for (int k = 0; k < n; k++)
		at += snprintf(cons + at, sizeof cons - (size_t)at, ",r");
	snprintf(cons + at, sizeof cons - (size_t)at, "%s,~{memory}", multi ? ",h" : "");
	int nargs = 3 + n;
	if (multi)   /* both blocks of the cluster */
		args[nargs++] = LLVMConstInt(LLVMInt16TypeInContext(m->ctx), 3, false);
	LLVMValueRef base = mm_stage_off(x, so, w);
	int np = x->cpr[w] / 8;
	/* the rank as an offset (ot) and as a coordinate (i32) */
	LLVMValueRef ro = multi ? LLVMBuildIntCast2(x->b, rank, LLVMTypeOf(base), false, "") : NULL;
	LLVMValueRef ri = multi ? LLVMBuildTrunc(x->b, rank, m->t_i32, "") : NULL;
	if (multi && np == 1) {
		/* one panel: this block's half of its rows */
		int half = x->outer[w] / 2;
		args[0] = mm_saddr(x, mm_add(x, base, mm_mulc(x, ro, (int64_t)half * 128)));
		args[3] = in;
		args[4] = LLVMBuildAdd(x->b, out, LLVMBuildMul(x->b, ri, mm_i32c(x, half), ""), "");
		mm_asm_call(x, m->t_void, text, cons, args, nargs);
		return;
	}
	for (int q = 0; q < (multi ? np / 2 : np); q++) {
		/* multicast: panels r*np/2 + q */
		LLVMValueRef po = multi ? mm_addc(x, mm_mulc(x, ro, np / 2), q) : mm_cst(base, q);
		LLVMValueRef pi = multi ? mm_addc(x, mm_mulc(x, ri, np / 2), q) : mm_i32c(x, q);
		args[0] = mm_saddr(x, mm_add(x, base, mm_mulc(x, po, (int64_t)x->outer[w] * 128)));
		args[3] = LLVMBuildAdd(x->b, in, mm_mulc(x, pi, 64), "");
		mm_asm_call(x, m->t_void, text, cons, args, nargs);
	}
}

/* ---- the two roles ------------------------------------------------------------- */

static void named_bar(Mm *x, LLVMValueRef id, int n, bool sync);
static LLVMBasicBlockRef if_begin(Mm *x, LLVMValueRef c);
static void if_end(Mm *x, LLVMBasicBlockRef on);

/* The multipliers are done with step j's stage. */
static void free_stage(Mm *x, const Ws *w, LLVMValueRef j)
{
	if (w->rank)
		mbar_arrive_both(x, bar_of(x, w, j, true), w->lane);
	else
		mm_mbar_arrive(x, bar_of(x, w, j, true));
}

/* One tile's K steps, copying (copy) or multiplying; nk (i64) steps. Ping-pong:
 * where turn (i1) holds, the other multiplying warpgroup's turn comes once this
 * one issued the tile's last products, while they are still in flight. */
static void tile_steps(Mm *x, const Ws *w, LLVMValueRef nk, LLVMValueRef kbeg, bool copy,
		       LLVMValueRef turn)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	CgLoop lk;
	cg_loop_begin(kb, &lk, mm_i64c(x, 0), nk, mm_i64c(x, 1));
	LLVMValueRef j = LLVMBuildLoad2(x->b, m->t_i32, w->jslot, "");
	LLVMValueRef kt = mm_add(x, kbeg, lk.i);   /* the K step among the matmul's */
	if (copy && w->gather) {
		/* a conv's gathered input: every copier waits for the stage, the first
		 * copies the weight's tile by TMA, each gathers its chunks of the
		 * input's window by cp.async and arrives once they landed */
		mm_mbar_wait(x, bar_of(x, w, j, true), parity_of(x, j, true));
		LLVMValueRef full = bar_of(x, w, j, false), so = stage_of(x, j);
		LLVMBasicBlockRef on = if_begin(x, LLVMBuildICmp(x->b, LLVMIntEQ, x->tid,
								 mm_i64c(x, 0), ""));
		mm_mbar_expect(x, full, x->stage_bytes - x->a_bytes);
		mm_tma_tile(x, 1, NULL, w->rank, so, kt, full);
		if_end(x, on);
		/* (whole chunks: a ws kernel's one copy of the tile loop, all_fast) */
		mm_load_tile(x, 0, so, kt);
		mm_asm_call(x, m->t_void, "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];",
			    "r,~{memory}", &full, 1);
	} else if (copy) {
		mm_mbar_wait(x, bar_of(x, w, j, true), parity_of(x, j, true));
		LLVMValueRef full = bar_of(x, w, j, false), so = stage_of(x, j);
		mm_mbar_expect(x, full, x->stage_bytes);
		mm_tma_tile(x, 0, NULL, w->rank, so, kt, full);
		mm_tma_tile(x, 1, NULL, w->rank, so, kt, full);
	} else {
		mm_mbar_wait(x, bar_of(x, w, j, false), parity_of(x, j, false));
		/* the gathered copies (generic proxy) before wgmma's reads (async proxy) */
		if (w->gather)
			mm_asm_call(x, m->t_void, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
		mm_compute_stage(x, stage_of(x, j));
		/* the group of the step before is done: its stage is free */
		LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.free");
		LLVMBasicBlockRef on = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.next");
		LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntSGT, lk.i, mm_i64c(x, 0), ""), go, on);
		LLVMPositionBuilderAtEnd(x->b, go);
		free_stage(x, w, LLVMBuildSub(x->b, j, mm_i32c(x, 1), ""));
		LLVMBuildBr(x->b, on);
		LLVMPositionBuilderAtEnd(x->b, on);
	}
	LLVMBuildStore(x->b, LLVMBuildAdd(x->b, j, mm_i32c(x, 1), ""), w->jslot);
	cg_loop_end(kb, &lk);
	if (copy)
		return;
	if (turn) {
		LLVMBasicBlockRef fi = if_begin(x, turn);
		named_bar(x, LLVMBuildSub(x->b, mm_i64c(x, 5), w->g, ""), 256, false);
		if_end(x, fi);
	}
	mm_wg_wait(x, 0);
	LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.last");
	LLVMBasicBlockRef on = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.epi");
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntSGT, nk, mm_i64c(x, 0), ""), go, on);
	LLVMPositionBuilderAtEnd(x->b, go);
	LLVMValueRef jn = LLVMBuildLoad2(x->b, m->t_i32, w->jslot, "");
	free_stage(x, w, LLVMBuildSub(x->b, jn, mm_i32c(x, 1), ""));
	LLVMBuildBr(x->b, on);
	LLVMPositionBuilderAtEnd(x->b, on);
}

/* Named barrier id among n threads: wait for the others (sync) or only arrive. */
static void named_bar(Mm *x, LLVMValueRef id, int n, bool sync)
{
	char text[48];
	snprintf(text, sizeof text, "bar.%s $0, %d;", sync ? "sync" : "arrive", n);
	LLVMValueRef v = LLVMBuildTrunc(x->b, id, x->kb->m->t_i32, "");
	mm_asm_call(x, x->kb->m->t_void, text, "r,~{memory}", &v, 1);
}

/* Ping-pong: the code of then() where c (i1) holds. */
static LLVMBasicBlockRef if_begin(Mm *x, LLVMValueRef c)
{
	CgKb *kb = x->kb;
	LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "pp.if");
	LLVMBasicBlockRef on = LLVMAppendBasicBlockInContext(kb->m->ctx, kb->fn, "pp.fi");
	LLVMBuildCondBr(x->b, c, go, on);
	LLVMPositionBuilderAtEnd(x->b, go);
	return on;
}

static void if_end(Mm *x, LLVMBasicBlockRef on)
{
	LLVMBuildBr(x->b, on);
	LLVMPositionBuilderAtEnd(x->b, on);
}

/* One role's walk over the block's tiles. Ping-pong: multiplying warpgroup g takes
 * the block's tiles i = g, g + 2, ..., whose steps are i * nk .. of the sequence,
 * and issues its products only once the other's of tile i - 1 are (named barrier
 * 4 + g, which the other arrives at once it issued them, while they are still in
 * flight, where tile i exists: tile_steps): so a stage's
 * phase is never waited for by one before the other's last round of it completed,
 * and one's epilogue runs while the other multiplies. */
static void role(Mm *x, const Ws *w, LLVMValueRef block, LLVMValueRef nblocks, const int *wr,
		 int nw, bool copy)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	bool pp = x->c->pp && !copy;
	LLVMBuildStore(x->b, mm_i32c(x, 0), w->jslot);
	LLVMValueRef nb, ntm, ntn;
	LLVMValueRef per_batch = mm_tile_grid(x, &nb, &ntm, &ntn);
	if (w->rank) {
		/* a cluster walks pairs of tile columns */
		ntn = mm_ceil_div(x, ntn, 2);
		per_batch = mm_mul(x, ntm, ntn);
	}
	LLVMValueRef total = mm_mul(x, nb, per_batch);
	LLVMValueRef nk = mm_ceil_div(x, x->K, x->c->bk);
	int G = x->ngroup > 1 ? x->ngroup : 1;
	/* split-K (neither ping-pong nor clusters): units of tiles x S, as the
	 * plain loop's (mm_split_share), each a share of the K steps */
	int S = x->c->split > 1 ? x->c->split : 1;
	LLVMValueRef units = mm_mul(x, total, mm_i64c(x, (int64_t)G * S));
	CgLoop lt;
	if (pp)
		cg_loop_begin(kb, &lt, mm_add(x, block, mm_mul(x, w->g, nblocks)), units,
			      mm_mulc(x, nblocks, 2));
	else
		cg_loop_begin(kb, &lt, block, units, nblocks);
	kb->nmemo = 0;
	LLVMValueRef t = lt.i;
	if (pp) {
		LLVMValueRef i = LLVMBuildUDiv(x->b, LLVMBuildSub(x->b, t, block, ""), nblocks, "");
		LLVMBuildStore(x->b, LLVMBuildTrunc(x->b, mm_mul(x, i, nk), m->t_i32, ""), w->jslot);
		LLVMBasicBlockRef on = if_begin(x, LLVMBuildICmp(x->b, LLVMIntUGT, i, mm_i64c(x, 0), ""));
		named_bar(x, mm_addc(x, w->g, 4), 256, true);
		if_end(x, on);
	}
	LLVMBasicBlockRef skip = mm_group_units(x, &t, mm_mulc(x, total, S));
	LLVMValueRef split = NULL, kbeg = mm_i64c(x, 0), nku = nk;
	if (S > 1) {
		LLVMValueRef kend;
		split = mm_split_share(x, &t, S, nk, &kbeg, &kend);
		nku = LLVMBuildSelect(x->b, mm_lt(x, kbeg, kend), LLVMBuildSub(x->b, kend, kbeg, ""),
				      mm_i64c(x, 0), "");
	}
	mm_tile_at(x, t, per_batch, ntm, ntn);
	LLVMValueRef mine = NULL;
	if (w->rank) {
		/* the pair's column 2q + rank; past the last one nothing is stored */
		x->n0 = mm_add(x, mm_mulc(x, x->n0, 2), mm_mulc(x, w->rank, x->c->bn));
		mine = LLVMBuildICmp(x->b, LLVMIntULT, x->n0, x->N, "");
	}
	if (!copy) {
		for (int e = 0; e < x->nacc; e++)
			mm_acc_store(x, mm_i64c(x, e), LLVMConstReal(m->t_f32, 0));
	}
	/* ping-pong: the other warpgroup's turn, where it has a next tile */
	tile_steps(x, w, nku, kbeg, copy, pp ? LLVMBuildICmp(x->b, LLVMIntULT, mm_add(x, lt.i, nblocks),
							     units, "") : NULL);
	if (!copy && mine) {
		LLVMBasicBlockRef on = if_begin(x, mine);
		mm_epilogue(x, wr, nw);
		if_end(x, on);
	} else if (!copy) {
		/* split: the last of the tile's units sums the partials, the others
		 * go on to their next unit */
		LLVMBasicBlockRef after = S > 1 ? mm_split_combine(x, mm_group_tile(x, t, total), split,
								   mm_mulc(x, total, G)) : NULL;
		mm_epilogue(x, wr, nw);
		if (after)
			if_end(x, after);
	}
	mm_group_end(x);
	if (skip) {
		LLVMBuildBr(x->b, skip);
		LLVMPositionBuilderAtEnd(x->b, skip);
	}
	cg_loop_end(kb, &lt);
}

/* A warpgroup's registers a thread from here on: raised (inc) or lowered; every
 * thread of the warpgroup runs it. */
static void set_maxnreg(Mm *x, bool inc, int regs)
{
	char text[64];
	snprintf(text, sizeof text, "setmaxnreg.%s.sync.aligned.u32 %d;", inc ? "inc" : "dec", regs);
	mm_asm_call(x, x->kb->m->t_void, text, "~{memory}", NULL, 0);
}

/* Programmatic dependent launch, before the grid wait: the second operand's panel
 * of the block's tile, its first K steps, from memory into L2 (the weights of a
 * projection stream in while the grid before drains), where the launch has a tile
 * a block at most (one wave: a larger grid's blocks would ask for the same panels
 * many times over, and its K loops are long). At most MM_WS_PREFETCH steps, and
 * MM_WS_PREFETCH_BYTES asked for by the whole grid (a third of the H100's L2).
 * Only a hint: a line that grid still writes is read after the wait from L2,
 * where those writes land. Thread 0; the tile's state is the copier's to set
 * again. */
static void prefetch_b(Mm *x, LLVMValueRef block, LLVMValueRef nblocks)
{
	CgKb *kb = x->kb;
	LLVMValueRef nb, ntm, ntn;
	LLVMValueRef per_batch = mm_tile_grid(x, &nb, &ntm, &ntn);
	LLVMValueRef total = mm_mul(x, nb, per_batch);
	int G = x->ngroup > 1 ? x->ngroup : 1;
	LLVMValueRef units = mm_mulc(x, total, G);
	LLVMValueRef one = LLVMBuildICmp(x->b, LLVMIntULE, units, nblocks, "");
	LLVMBasicBlockRef on = if_begin(x, LLVMBuildAnd(x->b, one, mm_lt(x, block, units), ""));
	LLVMValueRef t = block;
	mm_group_units(x, &t, total);
	mm_tile_at(x, t, per_batch, ntm, ntn);
	int64_t step = (int64_t)x->c->bn * x->c->bk * x->es;   /* a tile's panel a K step */
	LLVMValueRef cap = LLVMBuildUDiv(x->b, mm_i64c(x, MM_WS_PREFETCH_BYTES / step),
					 units, "");
	LLVMValueRef nk = mm_min64(x, mm_min64(x, mm_ceil_div(x, x->K, x->c->bk),
					       mm_i64c(x, MM_WS_PREFETCH)), cap);
	CgLoop lk;
	cg_loop_begin(kb, &lk, mm_i64c(x, 0), nk, mm_i64c(x, 1));
	tma_prefetch(x, 1, lk.i);
	cg_loop_end(kb, &lk);
	mm_group_end(x);
	if_end(x, on);
	x->grt = NULL;
	x->m0 = x->n0 = NULL;
	x->base[0] = x->base[1] = NULL;
	for (int d = 0; d < IR_MAX_RANK; d++)
		x->bpos[d] = NULL;
}

/* The kernel's tile loop for a ws configuration on the GPU (in place of
 * matmul_kernel.c's tile_loop, in each of its two copies). */
void mm_ws_tile_loop(Mm *x, LLVMValueRef block, LLVMValueRef nblocks, const int *wr, int nw)
{
	CgKb *kb = x->kb;
	CgModule *m = kb->m;
	const MmConfig *c = x->c;
	int region = x->epi_rows * (c->bn + MM_EPI_PAD) * 4;
	Ws w = {entry_alloca(x, m->t_i32), x->epi_base + (c->pp ? 2 : 1) * region, NULL, NULL, NULL,
		x->is_conv && x->cv.gather};
	if (w.gather && (c->cluster || c->pp)) {
		cg_fail(x->kb, "internal: %s does not take a gathered conv", c->name);
		return;
	}
	if (c->split > 1 && (c->cluster || c->pp)) {
		cg_fail(x->kb, "internal: %s splits K in clusters or ping-pong", c->name);
		return;
	}
	if (c->cluster) {
		/* the cluster is two blocks side by side along x (the runtime's launch) */
		w.rank = LLVMBuildAnd(x->b, block, mm_cst(block, 1), "");
		block = mm_udivc(x, block, 2);
		nblocks = mm_udivc(x, nblocks, 2);
	}
	/* thread 0 sets the mbarriers up, then everyone may use them */
	LLVMBasicBlockRef bi = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.init");
	LLVMBasicBlockRef bs = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.split");
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntEQ, x->tid, mm_i64c(x, 0), ""), bi, bs);
	LLVMPositionBuilderAtEnd(x->b, bi);
	for (int s = 0; s < c->stages; s++) {
		/* full[]: the TMA copier's arrival, and a gathering one's each */
		mm_mbar_init(x, mm_saddr(x, mm_i32c(x, w.bars + s * 8)), w.gather ? 1 + MM_WS_GATHERERS : 1);
		mm_mbar_init(x, mm_saddr(x, mm_i32c(x, w.bars + (c->stages + s) * 8)),
			  c->cluster ? 2 * MM_THREADS / 32 : c->pp ? MM_THREADS / 2 : MM_THREADS);
	}
	/* the initialised mbarriers visible to the copies that complete on them */
	mm_asm_call(x, m->t_void, "fence.mbarrier_init.release.cluster;", "~{memory}", NULL, 0);
	/* the tensor maps (parameters, not the grids' data) on their way in, and the
	 * weights of the first tile into L2 */
	for (int i = 0; i < 1 + IR_MM_GROUP_MAX && kb->late_wait; i++)
		if (kb->tmap[i])
			mm_asm_call(x, m->t_void, "prefetch.tensormap [$0];", "l,~{memory}",
				    &kb->tmap[i], 1);
	if (kb->late_wait && !c->cluster && c->split <= 1 && !w.gather)
		prefetch_b(x, block, nblocks);
	LLVMBuildBr(x->b, bs);
	LLVMPositionBuilderAtEnd(x->b, bs);
	if (c->cluster)
		cluster_sync(x);
	else
		mm_intrinsic(x, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
	/* programmatic dependent launch: the set-up above overlaps the grid before;
	 * from here on the kernel reads what that grid wrote */
	if (kb->late_wait)
		cg_grid_wait(kb);
	LLVMBasicBlockRef bm = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.multiply");
	LLVMBasicBlockRef bc = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.copy");
	LLVMBasicBlockRef bd = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.done");
	LLVMValueRef tid = x->tid;
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntULT, tid, mm_i64c(x, MM_THREADS), ""), bm, bc);

	LLVMPositionBuilderAtEnd(x->b, bm);
	set_maxnreg(x, true, w.gather ? MM_WS_GATHER_MUL_REGS : MM_WS_MUL_REGS);
	x->wsbar = true;
	if (c->cluster)
		w.lane = LLVMBuildAnd(x->b, tid, mm_cst(tid, 31), "");
	if (c->pp) {
		/* warpgroup g, its threads 0..127 as Mm.tid, its staged region and its
		 * barrier (2 + g) for the epilogue */
		w.g = mm_udivc(x, tid, 128);
		x->tid = LLVMBuildSub(x->b, tid, mm_mulc(x, w.g, 128), "");
		x->epi_off = LLVMBuildTrunc(x->b, mm_mulc(x, w.g, region), m->t_i32, "");
		x->ppbar = LLVMBuildTrunc(x->b, mm_addc(x, w.g, 2), m->t_i32, "");
	}
	role(x, &w, block, nblocks, wr, nw, false);
	x->wsbar = false;
	x->tid = tid;
	x->epi_off = x->ppbar = NULL;
	LLVMBuildBr(x->b, bd);

	LLVMPositionBuilderAtEnd(x->b, bc);
	if (w.gather) {
		/* every copier gathers, as threads 0..127 of the copying warpgroup */
		set_maxnreg(x, false, MM_WS_GATHER_REGS);
		x->tid = LLVMBuildSub(x->b, tid, mm_i64c(x, MM_THREADS), "");
		x->nthr = MM_WS_GATHERERS;
		role(x, &w, block, nblocks, wr, nw, true);
		x->tid = tid;
		x->nthr = 0;
		LLVMBuildBr(x->b, bd);
		LLVMPositionBuilderAtEnd(x->b, bd);
		return;
	}
	set_maxnreg(x, false, MM_WS_COPY_REGS);
	LLVMBasicBlockRef b1 = LLVMAppendBasicBlockInContext(m->ctx, kb->fn, "ws.copier");
	LLVMBuildCondBr(x->b, LLVMBuildICmp(x->b, LLVMIntEQ, tid, mm_i64c(x, MM_THREADS), ""),
			b1, bd);
	LLVMPositionBuilderAtEnd(x->b, b1);
	role(x, &w, block, nblocks, wr, nw, true);
	LLVMBuildBr(x->b, bd);

	LLVMPositionBuilderAtEnd(x->b, bd);
	if (c->cluster)
		cluster_sync(x);
}
