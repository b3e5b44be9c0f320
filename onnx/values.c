/* values.c: the importer's values and the graph it builds (values.h).
 *
 * Every ONNX value becomes a Val: a constant (a host tensor: initializers, Constant
 * nodes, and everything computed from constants only) or a graph tensor. Handlers
 * add ops through imp_emit(), which folds an op whose operands are all constants
 * by running it through the reference interpreter, so shape chains (Shape ->
 * Gather -> Concat -> Reshape), transposed weights and folded batch norms never
 * reach the graph, and an op's attributes that ONNX passes as tensors (Reshape's
 * shape, Slice's starts) are known when they are needed. Constants that a graph op
 * reads become graph constants (inputs with Tensor.data) the first time one does.
 * What folding may spend is bounded (the budget in values.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../host/interp.h"
#include "values.h"

/* ---- names ----------------------------------------------------------------- */

static size_t str_hash(const char *s)
{
	return (size_t)hash_u64(hash_bytes(HASH_SEED, s, strlen(s)), 0);
}

static void map_grow(NameMap *m);

static void **map_slot(NameMap *m, const char *key, bool add)
{
	if (add && (m->n + 1) * 2 > m->cap)
		map_grow(m);
	if (!m->cap)
		return NULL;
	for (size_t i = str_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->key[i]) {
			if (!add)
				return NULL;
			m->key[i] = key;
			m->n++;
			return &m->val[i];
		}
		if (!strcmp(m->key[i], key))
			return &m->val[i];
	}
}

static void map_grow(NameMap *m)
{
	NameMap old = *m;
	m->cap = old.cap ? old.cap * 2 : 64;
	m->key = xcalloc(m->cap, sizeof *m->key);
	m->val = xcalloc(m->cap, sizeof *m->val);
	m->n = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.key[i])
			*map_slot(m, old.key[i], true) = old.val[i];
	free(old.key);
	free(old.val);
}

void *imp_map_get(NameMap *m, const char *key)
{
	void **s = map_slot(m, key, false);
	return s ? *s : NULL;
}

void imp_map_put(NameMap *m, const char *key, void *v)
{
	*map_slot(m, key, true) = v;
}

void imp_map_free(NameMap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof *m);
}

/* ---- messages -------------------------------------------------------------- */

int imp_fail(Imp *m, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (m->node >= 0)
		diag_set(m->d, m->file, 0, 0, "node %d '%.60s' (%.40s, opset %d): %s", m->node,
			 m->node_name, m->op_type, m->opset, msg);
	else
		diag_set(m->d, m->file, 0, 0, "%s", msg);
	return -1;
}

/* ---- values and the graph being built --------------------------------------- */

Val *imp_const(Imp *m, HostTensor *k)
{
	Val *v = ARENA_NEW(m->tmp, Val, 1);
	v->dt = k->dtype;
	v->rank = k->rank;
	memcpy(v->dim, k->dim, sizeof v->dim);
	v->k = *k;
	v->is_const = true;
	v->tensor = -1;
	memset(k, 0, sizeof *k);
	if (m->nconsts == m->cconsts) {
		m->cconsts = m->cconsts ? 2 * m->cconsts : 64;
		m->consts = xrealloc(m->consts, m->cconsts * sizeof *m->consts);
	}
	m->consts[m->nconsts++] = v;
	return v;
}

/* Every graph tensor's element count and byte size fit int64, and the graph stays
 * under the caps of --max-ops, --max-tensors and --max-elements (ir_limits), as in
 * the YAML/JSON reader (ir/build.c): so shape arithmetic on a tensor's dims in the
 * handlers (a count, Flatten's products) cannot overflow, and a hostile model gets
 * a message instead of an out-of-memory kill. -1 (error set) when not. */
static int check_tensor(Imp *m, const char *what, DType dt, int rank, const int64_t *dim)
{
	int64_t n = 1, bytes, total;
	for (int i = 0; i < rank; i++)
		if (dim[i] < 0 || __builtin_mul_overflow(n, dim[i], &n))
			return imp_fail(m, "%s: shape %s has more elements than fit 64 bits", what,
					ir_shape_text(rank, dim).s);
	if (__builtin_mul_overflow(n, (int64_t)ir_dtype_size(dt), &bytes))
		return imp_fail(m, "%s: %lld elements × %d bytes (%s) overflows a 64-bit byte "
				"size", what, (long long)n, ir_dtype_size(dt), ir_dtype_name(dt));
	if (__builtin_add_overflow(m->elements, n, &total) || total > ir_limits.max_elements)
		return imp_fail(m, "%s: the graph's tensors hold more than %lld elements in all, "
				"the limit (--max-elements)", what,
				(long long)ir_limits.max_elements);
	if ((int64_t)m->g->ntensors >= ir_limits.max_tensors)
		return imp_fail(m, "%s: more than %lld tensors, the limit (--max-tensors)", what,
				(long long)ir_limits.max_tensors);
	m->elements = total;
	return 0;
}

static int new_tensor(Imp *m, DType dt, int rank, const int64_t *dim, int producer)
{
	Graph *g = m->g;
	if (g->ntensors == m->tcap) {
		m->tcap = m->tcap ? 2 * m->tcap : 256;
		g->tensors = xrealloc(g->tensors, (size_t)m->tcap * sizeof *g->tensors);
	}
	int id = g->ntensors++;
	Tensor *t = &g->tensors[id];
	memset(t, 0, sizeof *t);
	t->dtype = dt;
	t->rank = rank;
	memcpy(t->dim, dim, sizeof t->dim);
	t->producer = producer;
	t->last_read = -1;
	if (id == m->hcap) {
		m->hcap = m->hcap ? 2 * m->hcap : 256;
		m->hint = xrealloc(m->hint, (size_t)m->hcap * sizeof *m->hint);
	}
	m->hint[id] = m->cur_hint;
	return id;
}

static void add_input(Imp *m, int id)
{
	Graph *g = m->g;
	if (g->ninputs == m->icap) {
		m->icap = m->icap ? 2 * m->icap : 64;
		g->inputs = xrealloc(g->inputs, (size_t)m->icap * sizeof *g->inputs);
	}
	g->inputs[g->ninputs++] = id;
}

/* A value of the given shape holding flat's elements, not yet a graph tensor. */
Val *imp_flat(Imp *m, Val *flat, int rank, const int64_t *dim)
{
	if (!flat)
		return NULL;
	Val *v = ARENA_NEW(m->tmp, Val, 1);
	v->dt = flat->dt;
	v->rank = rank;
	memcpy(v->dim, dim, sizeof *dim * (size_t)rank);
	v->tensor = -1;
	v->flat = flat;
	return v;
}

/* The graph tensor of v, making a constant of it on first use, or the reshape of a
 * value kept flat (Val.flat). */
int imp_tensor(Imp *m, Val *v)
{
	if (v->tensor >= 0)
		return v->tensor;
	if (v->flat && !v->is_const) {
		Attrs at = imp_attrs(OP_RESHAPE);
		at.n = v->rank;
		memcpy(at.shape, v->dim, sizeof at.shape);
		Val *r = imp_emit(m, OP_RESHAPE, &v->flat, 1, &at);
		if (!r)
			return -1;
		v->tensor = r->tensor;
		Tensor *t = &m->g->tensors[v->tensor];
		if (v->name && !imp_map_get(&m->used, v->name)) {  /* bind() met it unmade */
			t->name = v->name;
			imp_map_put(&m->used, v->name, v);
		}
		return v->tensor;
	}
	if (check_tensor(m, v->name ? v->name : "a constant", v->dt, v->rank, v->dim))
		return -1;
	int id = new_tensor(m, v->dt, v->rank, v->dim, -1);
	size_t bytes = (size_t)v->k.n * (size_t)ir_dtype_size(v->dt);
	void *data = v->k.data;  /* borrowed: in the graph's arena already */
	if (!v->borrowed) {
		data = arena_alloc_raw(m->g->arena, bytes ? bytes : 1);
		memcpy(data, v->k.data, bytes);
	}
	m->g->tensors[id].data = data;
	m->g->tensors[id].role = ROLE_INPUT;
	if (v->name)
		m->g->tensors[id].name = v->name;
	add_input(m, id);
	v->tensor = id;
	return id;
}

Val *imp_graph_input(Imp *m, const char *name, DType dt, int rank, const int64_t *dim)
{
	char what[120];
	snprintf(what, sizeof what, "input '%.80s'", name);
	if (check_tensor(m, what, dt, rank, dim))
		return NULL;
	Val *v = ARENA_NEW(m->tmp, Val, 1);
	v->dt = dt;
	v->rank = rank;
	memcpy(v->dim, dim, sizeof v->dim);
	v->tensor = new_tensor(m, dt, rank, dim, -1);
	v->name = name;
	m->g->tensors[v->tensor].name = name;
	m->g->tensors[v->tensor].role = ROLE_INPUT;
	add_input(m, v->tensor);
	return v;
}

Attrs imp_attrs(OpKind k)
{
	Attrs a = {0};
	a.has = ir_ops[k].required | ir_ops[k].optional;
	if (a.has & A_STRIDE)
		a.stride[0] = a.stride[1] = 0;
	if (a.has & A_DILATION)
		a.dilation[0] = a.dilation[1] = 1;
	if (a.has & A_GROUPS)
		a.groups = 1;
	return a;
}

int imp_charge(Imp *m, int64_t n)
{
	if (n > m->fold_budget - m->fold_work)
		return imp_fail(m, "it would take the import past %lld element operations (its "
				"budget: 2^21, plus 8 per element of the model's initializers): not "
				"supported yet", (long long)m->fold_budget);
	m->fold_work += n;
	return 0;
}

/* Work to fold an op at import: elements read and written, and for matmul, conv2d
 * and the pools the multiply-adds or window reads per output element. Saturates. */
static int64_t fold_work(OpKind k, Val **in, int n, const Attrs *at, const Tensor *out)
{
	int64_t cnt = 1, w = 0, per = 0;
	for (int i = 0; i < out->rank; i++)
		if (__builtin_mul_overflow(cnt, out->dim[i], &cnt))
			return INT64_MAX;
	for (int i = 0; i < n; i++)
		if (__builtin_add_overflow(w, in[i]->k.n, &w))
			return INT64_MAX;
	if (k == OP_MATMUL && in[0]->rank)
		per = in[0]->dim[in[0]->rank - 1];
	else if (k == OP_CONV2D && n > 1 && in[1]->rank && in[1]->dim[0] > 0)
		per = in[1]->k.n / in[1]->dim[0];
	else if ((k == OP_MAX_POOL2D || k == OP_AVG_POOL2D) && at)
		per = (int64_t)at->kernel[0] * at->kernel[1];
	if (__builtin_mul_overflow(cnt, per + 1, &per) || __builtin_add_overflow(w, per, &w))
		return INT64_MAX;
	return w;
}

/* Run one op on constant operands through the interpreter. NULL with *big set (no
 * error) when folding it would take the import's folding past its budget
 * (IMP_FOLD_WORK, more for a model that carries large initializers): the op is then
 * emitted into the graph as it is, to run with the rest, so that a model cannot
 * make its import run for minutes or fill memory with a folded constant. */
static Val *fold(Imp *m, OpKind k, Val **in, int n, const Attrs *at, bool *big)
{
	Tensor ts[IR_MAX_IN + 1];
	int ids[IR_MAX_IN + 1], outs[1] = {n};
	HostTensor hin[IR_MAX_IN];
	memset(ts, 0, sizeof(Tensor) * (size_t)(n + 1));
	for (int i = 0; i < n; i++) {
		ts[i].name = "c";
		ts[i].dtype = in[i]->dt;
		ts[i].rank = in[i]->rank;
		memcpy(ts[i].dim, in[i]->dim, sizeof ts[i].dim);
		ts[i].producer = -1;
		ids[i] = i;
		hin[i] = in[i]->k;
	}
	Attrs attr = at ? *at : (Attrs){0};
	Op op = {.kind = k, .nin = n, .nout = 1, .in = ids, .out = {n},
		 .attr = at ? &attr : NULL};
	Graph mg = {.arena = m->tmp, .file = m->file, .name = "fold", .tensors = ts,
		    .ntensors = n + 1, .ops = &op, .nops = 1, .inputs = ids, .ninputs = n,
		    .outputs = outs, .noutputs = 1, .nstreams = 1};
	char msg[512];
	if (ir_infer(&mg, &op, op.attr ? &attr : NULL, &ts[n], msg, sizeof msg)) {
		imp_fail(m, "%s: %s", ir_ops[k].file, msg);
		return NULL;
	}
	/* a model read for every size: a result with a dim of a probe's multiple is left
	 * to run in the graph (an expand of a class token to the batch), so that it is
	 * not a constant as large as one size (every.c). A shape's values and what is
	 * computed on them (rank 1, as many as a rank) fold whatever their count. */
	bool shape = ts[n].rank == 1 && ts[n].dim[0] <= IR_MAX_RANK;
	for (int i = 0; m->every && !shape && i < ts[n].rank; i++)
		for (int s = 0; s < m->every->nsym; s++)
			if (ts[n].dim[i] % m->every->probe[s] == 0) {
				*big = true;
				return NULL;
			}
	int64_t work = fold_work(k, in, n, at, &ts[n]);
	if (work > m->fold_budget - m->fold_work) {
		*big = true;
		return NULL;
	}
	m->fold_work += work;
	ts[n].name = "r";
	ts[n].producer = 0;
	ts[n].is_output = true;
	HostTensor res = {0};
	Diag d;
	if (interp_run(&mg, hin, &res, &d)) {
		imp_fail(m, "folding %s: %s", ir_ops[k].file, d.msg);
		return NULL;
	}
	return imp_const(m, &res);
}

Val *imp_emit(Imp *m, OpKind k, Val **in, int n, const Attrs *at)
{
	/* an operand a builder failed to make: its error is already in m */
	for (int i = 0; i < n; i++)
		if (!in[i])
			return NULL;
	for (int i = 0; i < n; i++)
		if (in[i]->is_const && in[i]->k.n == 0) {
			imp_fail(m, "empty tensors are not supported (as an operand of %s)",
				 ir_ops[k].file);
			return NULL;
		}
	bool all = n > 0;
	for (int i = 0; i < n; i++)
		all = all && in[i]->is_const;
	bool big = false;
	if (all && !m->keep) {
		Val *v = fold(m, k, in, n, at, &big);
		if (v || !big)
			return v;
	}
	Graph *g = m->g;
	if ((int64_t)g->nops >= ir_limits.max_ops) {
		imp_fail(m, "more than %lld ops, the limit (--max-ops)",
			 (long long)ir_limits.max_ops);
		return NULL;
	}
	/* the graph tensors of constant operands first (a failure leaves no op) */
	for (int i = 0; i < n; i++)
		if (imp_tensor(m, in[i]) < 0)
			return NULL;
	if (g->nops == m->ocap) {
		m->ocap = m->ocap ? 2 * m->ocap : 256;
		g->ops = xrealloc(g->ops, (size_t)m->ocap * sizeof *g->ops);
	}
	int index = g->nops;
	Op *op = &g->ops[index];
	memset(op, 0, sizeof *op);
	op->kind = k;
	op->nin = n;
	op->in = ARENA_NEW(g->arena, int, n ? n : 1);
	op->in_status = ARENA_NEW(g->arena, uint8_t, n ? n : 1);
	for (int i = 0; i < n; i++)
		op->in[i] = imp_tensor(m, in[i]);
	op = &g->ops[index];  /* imp_tensor does not move ops, but stay safe */
	Attrs *ap = NULL;
	if (at && at->has) {
		ap = ARENA_NEW(g->arena, Attrs, 1);
		*ap = *at;
	}
	op->attr = ap;
	op->line = m->node + 1;
	op->col = 1;
	/* the ONNX node's name, so logs and explain name the node (every op a node
	 * decomposes into carries it) */
	if (m->node_name && m->node_name[0])
		op->name = arena_strdup(g->arena, m->node_name);
	Tensor out = {0};
	char msg[512];
	if (ir_infer(g, op, ap, &out, msg, sizeof msg)) {
		imp_fail(m, "%s: %s", ir_ops[k].file, msg);
		return NULL;
	}
	if (check_tensor(m, ir_ops[k].file, out.dtype, out.rank, out.dim))
		return NULL;
	g->nops++;
	Val *v = ARENA_NEW(m->tmp, Val, 1);
	v->dt = out.dtype;
	v->rank = out.rank;
	memcpy(v->dim, out.dim, sizeof v->dim);
	v->tensor = new_tensor(m, out.dtype, out.rank, out.dim, index);
	g->ops[index].out[0] = v->tensor;
	g->ops[index].nout = 1;
	return v;
}
