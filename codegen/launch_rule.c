/* launch_rule.c: the launch rules of every kernel kind (launch_rule.h), shared by
 * the compiler and the runtime. */
#include <string.h>

#include "launch_rule.h"

static int64_t pow2ceil(int64_t v)
{
	int64_t p = 1;
	while (p < v)
		p *= 2;
	return p;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static int64_t round16(int64_t v)
{
	return (v + 15) / 16 * 16;
}

/* Threads per row in rows mode, for rows of n elements:
 *   n <= 32       the next power of two (several rows per warp, 256 threads a block)
 *   n <= 1024     32: a warp per row, 8 rows a block
 *   larger        a block per row of pow2ceil(n / RED_ELEMS) threads, 64 to 512
 * RED_ELEMS (elements per thread for block-per-row rows) was measured on the H200:
 * docs/benchmarks.md, "Reductions". */
int64_t cg_reduce_row_threads(int64_t n)
{
	if (n <= 32)
		return pow2ceil(n < 1 ? 1 : n);
	if (n <= 1024)
		return 32;
	int64_t g = pow2ceil(ceil_div(n, CG_RED_ELEMS));
	return g < 64 ? 64 : g > CG_RED_THREADS ? CG_RED_THREADS : g;
}

/* Threads per row of a kernel with the row cache (rows broadcast back, vector path):
 *   n <= 32       as cg_reduce_row_threads
 *   larger        pow2ceil(n / CG_RED_CACHE), 32 to CG_RED_CACHE_BLOCK: a warp per
 *                 row up to 32 * CG_RED_CACHE elements, then a block per row; rows
 *                 up to CG_RED_CACHE_BLOCK * CG_RED_CACHE elements are then held in
 *                 shared memory, CG_RED_CACHE a thread (measured on the H200:
 *                 docs/benchmarks.md, "Reductions" and session 31's "Norms and
 *                 softmax").
 * Longer rows (or rows the vector path cannot take) run the passes over memory,
 * with cg_reduce_row_threads. */
static int64_t cache_threads(int64_t n, int64_t most, int64_t each)
{
	if (n <= 32 || n > most * each)
		return cg_reduce_row_threads(n);
	int64_t g = pow2ceil(ceil_div(n, each));
	return g < 32 ? 32 : g > most ? most : g;
}

int64_t cg_reduce_cache_threads(int64_t n)
{
	return cache_threads(n, CG_RED_CACHE_BLOCK, CG_RED_CACHE);
}

int64_t cg_reduce_dyn_threads(int64_t per_thread)
{
	if (per_thread <= 0 || per_thread > CG_RED_DYN_BYTES / 32)
		return 0;
	int64_t g = CG_RED_DYN_THREADS;
	while (g >= 32 && g * per_thread > CG_RED_DYN_BYTES)
		g /= 2;
	return g < 32 ? 0 : g;
}

bool cg_reduce_few_rows(int64_t n, int64_t rows, bool cache)
{
	if (n <= 32 || rows <= 0)
		return false;
	int64_t G = cache ? cg_reduce_cache_threads(n) : cg_reduce_row_threads(n);
	int64_t R = G < 256 ? 256 / G : 1;
	return ceil_div(rows, R) < CG_RED_FEW_WAVE;
}

void cg_reduce_rows_block(int64_t n, int64_t rows, bool cache, int64_t *G, int64_t *R)
{
	int64_t g = cache ? cg_reduce_cache_threads(n) : cg_reduce_row_threads(n);
	int64_t r = g < 256 ? 256 / g : 1;
	if (cg_reduce_few_rows(n, rows, cache)) {
		int64_t most = cache ? CG_RED_CACHE_BLOCK : CG_RED_THREADS;
		int64_t f = pow2ceil(ceil_div(n, CG_RED_FEW_ELEMS));
		f = f < most ? f : most;
		g = f > g ? f : g;   /* never fewer (a row past the cache keeps 512) */
		r = 1;
	}
	*G = g;
	*R = r;
}

/* Long rows (the row cache in dynamic shared memory): as above with `each` elements
 * a thread, up to the threads whose slots fit, so rows of 16384 f32 take 512 threads
 * and 64 KiB a cached tensor, rows of 32768 1024 threads; bf16 rows of 65536 (64
 * elements a thread) 1024 threads and 128 KiB. */
int64_t cg_reduce_dyn_cache_threads(int64_t n, int64_t per_thread, int64_t each)
{
	int64_t most = cg_reduce_dyn_threads(per_thread);
	return most && each > 0 ? cache_threads(n, most, each) : cg_reduce_row_threads(n);
}

/* The launch rule of cooperative reduce kernels (CgLaunch.arg: column, split, arg,
 * axis, rank, the full shape ids, at [13] whether the kernel has the row cache, and at
 * [14] and [15] its bytes and the row's elements a thread where the cache is in
 * dynamic shared memory, else 0):
 *   rows mode: block (G, R) with G = cg_reduce_row_threads(n) (with the row cache
 *     cg_reduce_cache_threads(n), or cg_reduce_dyn_cache_threads(n, [14], [15])), R =
 *     256 / G rows per block when G < 256 (else 1); grid.x = ceil(rows / R). A
 *     dynamic cache gets G * R * [14] bytes of shared memory where the row fits it
 *     (n at most G * [15], G * R at most cg_reduce_dyn_threads([14])), else none.
 *     Few rows (grid.x by the above under CG_RED_FEW_WAVE: up to 1055 rows at 8 a
 *     block; rows longer than 32, no dynamic cache, no split): R = 1 and G raised
 *     to pow2ceil(n / CG_RED_FEW_ELEMS), at most 256 with the row cache (its
 *     slots), 512 without, never lowered. Measured at 128 and 197 rows (GPT-2,
 *     BERT, Llama and ViT at batch 1).
 *   columns mode: block (32, Ry), Ry = min(16, pow2ceil(n)); grid.x = one block per 32
 *     adjacent columns.
 *   split (one reduction, not broadcast): when grid.x is below CG_RED_TARGET_BLOCKS and
 *     the rows are long, grid.y = S = min(ceil(CG_RED_TARGET_BLOCKS / grid.x), n / (8
 *     threads' worth), G or 64), rows mode then with G = 512. The scratch holds a u32
 *     counter per row (columns: per block of columns), 16-byte aligned, then S 8-byte
 *     partials per output element, then S 8-byte indices (argmax/argmin). */
static void reduce_rule(const CgLaunch *l, const int64_t *dims, int ndims, CgDims *o)
{
	const int64_t *a = l->arg;
	bool column = a[0], split = a[1], arg = a[2], cache = a[13];
	int64_t dyn = cache ? a[14] : 0, each = a[15];
	int ax = (int)a[3], rank = (int)a[4];
	int64_t d[IR_MAX_RANK] = {0};
	for (int i = 0; i < rank && i < IR_MAX_RANK; i++) {
		uint32_t id = (uint32_t)a[5 + i];
		d[i] = id == 0 || (int)id >= ndims ? 1 : dims[id];
	}
	int64_t n = d[ax], rows = 1, outer = 1, inner = 1;
	for (int i = 0; i < rank; i++) {
		if (i == ax)
			continue;
		rows *= d[i];
		if (i < ax)
			outer *= d[i];
		else
			inner *= d[i];
	}
	int64_t S = 1, counters = 0;
	const int64_t cap = (int64_t)1 << 30;
	if (!column) {
		int64_t G = dyn > 0 ? cg_reduce_dyn_cache_threads(n, dyn, each)
			  : cache ? cg_reduce_cache_threads(n) : cg_reduce_row_threads(n);
		if (split && rows < CG_RED_TARGET_BLOCKS && n > CG_RED_THREADS * 8 * 2) {
			G = CG_RED_THREADS;
			S = ceil_div(CG_RED_TARGET_BLOCKS, rows);
			if (S > n / (G * 8))
				S = n / (G * 8);
			if (S > G)
				S = G;
			if (S < 1)
				S = 1;
		}
		int64_t R = G < 256 ? 256 / G : 1;
		if (S > 1)
			R = 1;
		if (S == 1 && dyn == 0)   /* G is the cache's or the rows mode's here */
			cg_reduce_rows_block(n, rows, cache, &G, &R);
		int64_t g = ceil_div(rows, R);
		o->grid[0] = g < 1 ? 1 : g > cap ? cap : g;
		o->block[0] = (int)G;
		o->block[1] = (int)R;
		counters = rows;
		if (dyn > 0 && each > 0 && n > 0 && n <= G * each && G * R <= cg_reduce_dyn_threads(dyn))
			o->shared_bytes = G * R * dyn;
	} else {
		int64_t Ry = pow2ceil(n);
		if (Ry > CG_RED_THREADS / 32)
			Ry = CG_RED_THREADS / 32;
		int64_t tiles = outer * ceil_div(inner, 32);
		if (split && tiles < CG_RED_TARGET_BLOCKS) {
			S = ceil_div(CG_RED_TARGET_BLOCKS, tiles);
			if (S > n / (Ry * 8))
				S = n / (Ry * 8);
			if (S > 64)
				S = 64;
			if (S < 1)
				S = 1;
		}
		o->grid[0] = tiles < 1 ? 1 : tiles > cap ? cap : tiles;
		o->block[0] = 32;
		o->block[1] = (int)Ry;
		counters = tiles;
	}
	o->grid[1] = S;
	if (S > 1)
		o->scratch_bytes = round16(4 * counters) + rows * S * 8 * (arg ? 2 : 1);
	else if (split)
		o->scratch_bytes = 16;   /* the parameter exists; nothing is used */
	o->threads = (int64_t)o->grid[0] * o->grid[1] * o->block[0] * o->block[1];
}


static int64_t dim_of(int64_t id, const int64_t *dims, int ndims)
{
	return id <= 0 || id >= ndims ? 1 : dims[id];
}

/* One block of `block` threads per output tile, times the split for split-K, at
 * most `most` blocks where most > 0 (a persistent kernel loops over the rest): the
 * scratch holds a counter per tile (16-byte rounded), then a partial tile per
 * unit of the split. */
static void tiles_launch(int64_t tiles, int64_t split, int64_t partial, int64_t smem,
			 int block, int64_t most, CgDims *out)
{
	if (split > 1)
		out->scratch_bytes = ((4 * tiles + 15) & ~(int64_t)15) + tiles * split * partial;
	tiles *= split > 1 ? split : 1;
	if (tiles < 1)
		tiles = 1;
	if (tiles > (int64_t)1 << 30)
		tiles = (int64_t)1 << 30;   /* the kernel loops over the rest */
	if (most > 0 && tiles > most)
		tiles = most;
	out->grid[0] = tiles;
	out->block[0] = block;
	out->shared_bytes = smem;
	out->threads = tiles * block;
}

/* The launch rule of tiled kernels (matmul_pick.c): one block per output tile,
 * grid.x = batch x tile rows x tile columns (times the split for split-K, times the
 * matmuls of a kernel of siblings); dynamic shared memory only for configurations
 * past MM_SMEM_STATIC. arg: BM, BN, the shape ids of M and N, the number of batch
 * dims, their shape ids, the dynamic shared bytes (0: static), then for split-K the
 * split and the bytes of one block's partial (the scratch: counters, then
 * partials), the number of sibling matmuls (0: one), the most blocks (0: one
 * a tile; a persistent kernel's, matmul_ws.c), and the blocks of a cluster (0:
 * none; the tile columns then count up to a multiple of it, and so does the
 * grid). The block is l->block threads. */
static void matmul_rule(const CgLaunch *l, const int64_t *dims, int ndims, CgDims *out)
{
	const int64_t *a = l->arg;
	int64_t m = dim_of(a[2], dims, ndims), n = dim_of(a[3], dims, ndims);
	int64_t cols = (n + a[1] - 1) / a[1];
	int64_t cluster = 10 + a[4] < CG_LAUNCH_ARGS && a[10 + a[4]] > 1 ? a[10 + a[4]] : 1;
	cols = (cols + cluster - 1) / cluster * cluster;
	int64_t tiles = ((m + a[0] - 1) / a[0]) * cols;
	for (int d = 0; d < a[4]; d++)
		tiles *= dim_of(a[5 + d], dims, ndims);
	if (8 + a[4] < CG_LAUNCH_ARGS && a[8 + a[4]] > 1)
		tiles *= a[8 + a[4]];
	int64_t most = 9 + a[4] < CG_LAUNCH_ARGS ? a[9 + a[4]] : 0;
	most -= most % cluster;
	tiles_launch(tiles, a[6 + a[4]], a[7 + a[4]], a[5 + a[4]], l->block, most, out);
}

/* The launch rule of conv tiles (matmul_conv.c): as the matmul's, over images x
 * groups batches of OC/G x OH*OW (channels last: every pixel by a group's
 * channels). arg: BM, BN, the shape ids of N, OC, OH, OW (in the output's order),
 * the groups, the dynamic shared bytes, the split, the bytes of one block's
 * partial, the layout, and the most blocks (0: one a tile; a persistent
 * kernel's, matmul_ws.c). The block is l->block threads. */
static void conv_rule(const CgLaunch *l, const int64_t *dims, int ndims, CgDims *out)
{
	const int64_t *a = l->arg;
	if (a[10] == LAYOUT_NHWC) {
		int64_t m = dim_of(a[2], dims, ndims) * dim_of(a[3], dims, ndims) *
			    dim_of(a[4], dims, ndims);
		int64_t n = dim_of(a[5], dims, ndims) / a[6];
		int64_t tiles = ((m + a[0] - 1) / a[0]) * ((n + a[1] - 1) / a[1]) * a[6];
		tiles_launch(tiles, a[8], a[9], a[7], l->block, a[11], out);
		return;
	}
	int64_t m = dim_of(a[3], dims, ndims) / a[6];
	int64_t n = dim_of(a[4], dims, ndims) * dim_of(a[5], dims, ndims);
	int64_t tiles = ((m + a[0] - 1) / a[0]) * ((n + a[1] - 1) / a[1]) *
			dim_of(a[2], dims, ndims) * a[6];
	tiles_launch(tiles, a[8], a[9], a[7], l->block, a[11], out);
}

void cg_launch_eval(const CgLaunch *l, const int64_t *dims, int ndims, CgDims *out)
{
	memset(out, 0, sizeof *out);
	out->grid[1] = out->grid[2] = 1;
	out->block[1] = out->block[2] = 1;
	if (l->coop) {
		switch (l->rule) {
		case CG_RULE_REDUCE: reduce_rule(l, dims, ndims, out); return;
		case CG_RULE_MATMUL: matmul_rule(l, dims, ndims, out); return;
		case CG_RULE_CONV: conv_rule(l, dims, ndims, out); return;
		default: break;
		}
	}
	int64_t work = 1;
	for (int i = 0; i < l->nwork; i++)
		work *= dim_of(l->work[i], dims, ndims);
	int64_t t = (work + l->vec - 1) / l->vec;
	if (t < 1)
		t = 1;
	int64_t g = (t + l->block - 1) / l->block;
	if (g > l->max_grid)
		g = l->max_grid;
	out->grid[0] = g;
	out->block[0] = l->block;
	out->threads = t;
}

static const char *const rule_names[CG_RULE_COUNT] = {"stride", "reduce", "matmul", "conv"};

const char *cg_rule_name(CgRule r)
{
	return r >= 0 && r < CG_RULE_COUNT ? rule_names[r] : "?";
}

int cg_rule_parse(const char *s)
{
	for (int r = 0; r < CG_RULE_COUNT; r++)
		if (!strcmp(s, rule_names[r]))
			return r;
	return -1;
}
