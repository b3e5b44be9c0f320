/* import.c: an ONNX graph -> fusec's graph IR (docs/onnx.md).
 *
 * The model's bytes (from load.c) are unpacked (proto.c) and its nodes visited in
 * order (ONNX requires a topological order). Each node is decomposed by its
 * handler (ops.c's table) into fusec's primitive ops, whose values and folding
 * live in values.c; a GELU written out (patterns.c) becomes one op.
 *
 * ONNX's multidirectional broadcasting becomes explicit reshapes (leading 1s);
 * equal-rank broadcasting over dims of 1 is what fusec's binary ops do already.
 * Graph tensors take the ONNX name of the value they hold; tensors made inside a
 * decomposition are named after the node's first output, "NAME~K". */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "ops.h"
#include "patterns.h"

/* ---- the model -------------------------------------------------------------- */

static const char *default_name(Arena *a, const char *file)
{
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	const char *dot = strrchr(base, '.');
	size_t len = dot && dot > base ? (size_t)(dot - base) : strlen(base);
	if (!len)
		return "model";
	char *s = arena_strndup(a, base, len);
	for (char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
			*p = '_';
	if (s[0] == '.')
		s[0] = '_';
	return s;
}

static bool bad_name(const char *s)
{
	if (!s || !s[0])
		return true;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return true;
	return false;
}

/* dim_param `name` of a model read for every size (Imp.every): its range from
 * --dims (1.. without one); when that holds more than one size, a symbol (the same
 * name is the same symbol) with *v its probe size, else -1 with *v the one size;
 * -2 on an error. */
static int imp_symbol(Imp *m, const char *name, int64_t *v)
{
	OnnxEvery *e = m->every;
	const IrShapeLookup *lk = m->opt->lookup;
	int64_t lo = 1, hi = IR_DIM_TOP;
	for (int r = 0; r < lk->nranges; r++)
		if (!strcmp(lk->ranges[r].name, name)) {
			lo = lk->ranges[r].lo;
			hi = lk->ranges[r].hi;
			e->used[r] = true;
		}
	/* a name --input-shape fixes in another input is that size here too */
	for (int k = 0; k < e->nfixed; k++)
		if (!strcmp(e->fixed_name[k], name)) {
			*v = e->fixed[k];
			return -1;
		}
	if (lo == hi) {
		*v = lo;
		return -1;
	}
	for (int k = 0; k < e->nsym; k++)
		if (!strcmp(e->name[k], name)) {
			*v = e->probe[k];
			return k;
		}
	if (e->nsym == IR_SYM_MAX)
		return imp_fail(m, "more than %d dim_params left for every size; fix some with "
				"--input-shape", IR_SYM_MAX) - 1;
	int k = e->nsym;
	/* the second import's probes are none of the first's (a product of two
	 * symbols would not tell them apart otherwise) */
	int64_t used[2 * IR_SYM_MAX];
	memcpy(used, e->probe, sizeof *used * (size_t)k);
	int nused = k;
	for (int j = 0; e->first && j < e->nfirst; j++)
		used[nused++] = e->first[j];
	*v = ir_sym_probe(lo, hi, used, nused);
	if (!*v)
		return imp_fail(m, "dim_param '%.60s': its range %lld..%lld holds too few sizes "
				"to compile the model at; fix it with --input-shape", name,
				(long long)lo, (long long)hi) - 1;
	e->name[k] = arena_strdup(m->a, name);
	e->lo[k] = lo;
	e->hi[k] = hi;
	e->probe[k] = *v;
	e->nsym++;
	return k;
}

/* The static shape of graph input vi, with --input-shape applied; in a model read
 * for every size, a dim_param no --input-shape fixes is imported at its symbol's
 * probe size (symof[i] the symbol, else -1). */
static int input_shape(Imp *m, const Onnx__ValueInfoProto *vi, DType *dt, int *rank,
		       int64_t *dim, int8_t *symof)
{
	memset(symof, -1, IR_MAX_RANK);
	const char *name = vi->name;
	const Onnx__TypeProto *tp = vi->type;
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
		return imp_fail(m, "input '%.80s' is not a tensor (sequences, maps and "
			       "optionals are not supported yet)", name);
	const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
	int t = onnx_dtype(tt->elem_type);
	if (t < 0)
		return imp_fail(m, "input '%.80s' has element type %s, not supported yet", name,
				onnx_elem_name(tt->elem_type));
	*dt = (DType)t;
	const OnnxInputShape *fix = NULL;
	for (int i = 0; m->opt && i < m->opt->nshapes; i++)
		if (!strcmp(m->opt->shapes[i].name, name))
			fix = &m->opt->shapes[i];
	/* an input not static that no --input-shape gives: the shape of its data */
	OnnxInputShape data = {0};
	bool fixed = tt->shape != NULL;
	for (size_t i = 0; fixed && i < tt->shape->n_dim; i++)
		fixed = tt->shape->dim[i]->value_case ==
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
			tt->shape->dim[i]->dim_value >= 1;
	if (!fix && !fixed && m->opt && m->opt->lookup && m->opt->lookup->shape) {
		int rc = m->opt->lookup->shape(m->opt->lookup->ctx, name, &data, m->d);
		if (rc < 0)
			return -1;
		fix = rc ? &data : NULL;
	}
	if (fix) {
		char by[600];
		if (fix->from)
			snprintf(by, sizeof by, "--inputs %.80s (%.200s)", name, fix->from);
		else
			snprintf(by, sizeof by, "--input-shape %s", name);
		if (tt->shape && tt->shape->n_dim != (size_t)fix->rank)
			return imp_fail(m, "%s gives rank %d, the model says %zu", by, fix->rank,
					tt->shape->n_dim);
		for (size_t i = 0; tt->shape && i < tt->shape->n_dim; i++) {
			const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
			if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
			    dm->dim_value != fix->dim[i])
				return imp_fail(m, "%s gives dim %zu = %lld, the model fixes it to "
						"%lld", by, i, (long long)fix->dim[i],
						(long long)dm->dim_value);
		}
		for (int i = 0; i < fix->rank; i++)
			if (fix->dim[i] < 1)
				return imp_fail(m, "input '%.80s': empty tensors (a dim of 0) are not "
						"supported", name);
		*rank = fix->rank;
		memcpy(dim, fix->dim, sizeof(int64_t) * IR_MAX_RANK);
		return 0;
	}
	if (!tt->shape)
		return imp_fail(m, "input '%.80s' has no shape: give one with --input-shape "
			       "%.80s=DxD...", name, name);
	if (tt->shape->n_dim > IR_MAX_RANK)
		return imp_fail(m, "input '%.80s' has rank %zu, more than %d", name,
				tt->shape->n_dim, IR_MAX_RANK);
	*rank = (int)tt->shape->n_dim;
	for (size_t i = 0; i < tt->shape->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
		if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
		    m->every && dm->dim_param && dm->dim_param[0]) {
			int k = imp_symbol(m, dm->dim_param, &dim[i]);
			if (k < -1)
				return -1;
			symof[i] = (int8_t)k;
			continue;
		}
		if (dm->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
		    dm->dim_value < 1) {
			const char *sym =
				dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
					? dm->dim_param : "?";
			return imp_fail(m, "input '%.80s' dim %zu ('%.40s') is not static: fix "
				       "the shape with --input-shape %.80s=DxD...", name, i, sym,
				       name);
		}
		dim[i] = dm->dim_value;
	}
	return 0;
}

static int bind(Imp *m, const char *name, Val *v)
{
	if (!name || !name[0])
		return 0;
	if (imp_map_get(&m->vals, name))
		return imp_fail(m, "value '%.80s' is defined twice", name);
	imp_map_put(&m->vals, name, v);
	if (v->tensor >= 0) {
		Tensor *t = &m->g->tensors[v->tensor];
		if (!t->name && !imp_map_get(&m->used, name)) {
			t->name = name;
			imp_map_put(&m->used, name, v);
		}
	} else if (!v->name) {
		v->name = name;
	}
	return 0;
}

static int run_node(Imp *m, const Onnx__NodeProto *n)
{
	m->n = n;
	m->node_name = n->name && n->name[0] ? n->name : (n->n_output ? n->output[0] : "");
	m->op_type = n->op_type ? n->op_type : "";
	m->cur_hint = n->n_output && n->output[0][0] ? n->output[0] : m->node_name;
	if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx"))
		return imp_fail(m, "op domain '%.60s' is not supported (only the default ONNX "
			       "domain)", n->domain);
	if (n->n_input > IR_MAX_IN || n->n_output > 64)
		return imp_fail(m, "too many inputs or outputs");
	const OnnxHandler *h = onnx_handler(m->op_type);
	if (!h)
		return imp_fail(m, "op %s has no mapping to fusec ops yet", m->op_type);
	Val *in[IR_MAX_IN + 1] = {0};
	for (size_t i = 0; i < n->n_input; i++) {
		const char *nm = n->input[i];
		if (!nm || !nm[0])
			continue;
		in[i] = imp_map_get(&m->vals, nm);
		if (!in[i])
			return imp_fail(m, "input %zu '%.80s' is not defined above", i, nm);
	}
	Val *out[64] = {0};
	int nout = (int)n->n_output;
	if (h->fn(m, h, in, (int)n->n_input, out, nout)) {
		/* a handler that met a missing input may have said nothing: say it here */
		if (!m->d->msg[0])
			imp_fail(m, "an input it needs is missing (empty name) or not supported");
		return -1;
	}
	for (int i = 0; i < nout; i++) {
		const char *nm = n->output[i];
		if (!nm || !nm[0])
			continue;
		if (!out[i])
			return imp_fail(m, "output %d '%.80s' is not supported yet", i, nm);
		if (bad_name(nm))
			return imp_fail(m, "output %d has a name with control characters", i);
		if (bind(m, nm, out[i]))
			return -1;
	}
	return 0;
}

/* The scalar value of constant `name`, or NAN when it is not one. */
static double const_scalar(Imp *m, const char *name)
{
	Val *v = imp_map_get(&m->vals, name);
	if (!v || !v->is_const || v->k.n != 1 || !ir_dtype_is_float(v->dt))
		return NAN;
	return host_get(&v->k, 0);
}

/* GELU written out (patterns.c): one gelu op of x, bound to the last node's output.
 * 1 when done; 0 when the constants are not GELU's (the nodes are then imported one
 * by one). */
static int run_gelu(Imp *m, const Onnx__GraphProto *gp, const OnnxGelu *g)
{
	Val *x = imp_map_get(&m->vals, g->x);
	if (!x || x->is_const || !ir_dtype_is_float(x->dt))
		return 0;
	double eps = x->dt == DT_BF16 ? 0x1p-7 : x->dt == DT_F16 ? 0x1p-10 : x->dt == DT_F32 ? 0x1p-23 : 0x1p-52;
	for (int i = 0; i < g->nk; i++)
		if (!onnx_gelu_constant(const_scalar(m, g->k[i]), g->want[i], eps))
			return 0;
	const Onnx__NodeProto *last = gp->node[g->node[g->n - 1]];
	m->node = g->node[g->n - 1];
	m->node_name = last->name && last->name[0] ? last->name : last->output[0];
	m->op_type = "Mul";
	m->cur_hint = last->output[0];
	Val *y = ob_gelu(m, x, g->tanh ? GELU_TANH : GELU_NONE);
	if (!y || bind(m, last->output[0], y))
		return -1;
	return 1;
}

/* Every node in order. The first nodes of a GELU written out wait for its last, which
 * imports them as one gelu op, or one by one when its constants say it is not GELU
 * after all. */
static int run_nodes(Imp *m, const Onnx__GraphProto *gp)
{
	OnnxIndex ix;
	onnx_index_build(&ix, gp);
	int *wait = xmalloc(sizeof *wait * (gp->n_node + 1));
	OnnxGelu *pat = xcalloc(gp->n_node + 1, sizeof *pat);
	for (size_t i = 0; i < gp->n_node; i++)
		wait[i] = -1;
	for (size_t i = 0; i < gp->n_node; i++) {
		OnnxGelu g;
		if (!onnx_gelu_find(&ix, i, &g))
			continue;
		bool taken = false;
		for (int k = 0; k < g.n - 1; k++)
			taken = taken || wait[g.node[k]] >= 0 || pat[g.node[k]].x;
		if (taken)
			continue;
		for (int k = 0; k < g.n - 1; k++)
			wait[g.node[k]] = (int)i;
		pat[i] = g;
	}
	int rc = 0;
	for (size_t i = 0; i < gp->n_node && !rc; i++) {
		if (wait[i] >= 0)
			continue;
		if (pat[i].x) {
			int done = run_gelu(m, gp, &pat[i]);
			if (done < 0) {
				rc = -1;
				break;
			}
			for (int k = 0; k < pat[i].n - 1 && !done && !rc; k++) {
				m->node = pat[i].node[k];
				rc = run_node(m, gp->node[pat[i].node[k]]);
			}
			if (done || rc)
				continue;
		}
		m->node = (int)i;
		rc = run_node(m, gp->node[i]);
	}
	free(wait);
	free(pat);
	onnx_index_free(&ix);
	return rc;
}

/* A graph output: a tensor named as the ONNX output. A value that already has
 * another name (an input, a constant, an Identity) gets a reshape to itself. */
static int add_output(Imp *m, const char *name)
{
	Val *v = imp_map_get(&m->vals, name);
	if (!v)
		return imp_fail(m, "graph output '%.80s' is not computed by any node", name);
	if (v->is_const && v->k.n == 0)
		return imp_fail(m, "graph output '%.80s' is empty: empty tensors are not supported",
				name);
	int id = imp_tensor(m, v);
	if (id < 0)
		return -1;
	Graph *g = m->g;
	if (!g->tensors[id].name || strcmp(g->tensors[id].name, name) ||
	    g->tensors[id].is_output) {
		Attrs at = imp_attrs(OP_RESHAPE);
		at.n = v->rank;
		memcpy(at.shape, v->dim, sizeof at.shape);
		bool was = v->is_const;
		v->is_const = false;   /* keep the copy in the graph */
		Val *c = imp_emit(m, OP_RESHAPE, &v, 1, &at);
		v->is_const = was;
		if (!c)
			return -1;
		id = c->tensor;
		if (!g->tensors[id].name && !imp_map_get(&m->used, name))
			g->tensors[id].name = name;
		else
			return imp_fail(m, "graph output '%.80s' is listed twice", name);
		imp_map_put(&m->used, name, c);
	}
	g->tensors[id].is_output = true;
	g->outputs[g->noutputs++] = id;
	return 0;
}

/* Names for the tensors a decomposition made: "HINT~K", unique. */
static void name_rest(Imp *m)
{
	Graph *g = m->g;
	int k = 0;
	for (int i = 0; i < g->ntensors; i++) {
		if (g->tensors[i].name)
			continue;
		const char *h = m->hint[i] && m->hint[i][0] ? m->hint[i] : "t";
		for (;;) {
			char *s = arena_printf(g->arena, "%s~%d", h, ++k);
			if (!imp_map_get(&m->used, s) && !imp_map_get(&m->vals, s)) {
				g->tensors[i].name = s;
				imp_map_put(&m->used, s, g);
				break;
			}
		}
	}
}

/* Move the growable arrays into the arena. */
static void settle(Imp *m)
{
	Graph *g = m->g;
	Tensor *t = ARENA_NEW(g->arena, Tensor, g->ntensors + 1);
	memcpy(t, g->tensors, sizeof *t * (size_t)g->ntensors);
	free(g->tensors);
	g->tensors = t;
	Op *o = ARENA_NEW(g->arena, Op, g->nops + 1);
	if (g->nops)
		memcpy(o, g->ops, sizeof *o * (size_t)g->nops);
	free(g->ops);
	g->ops = o;
	int *in = ARENA_NEW(g->arena, int, g->ninputs + 1);
	if (g->ninputs)
		memcpy(in, g->inputs, sizeof *in * (size_t)g->ninputs);
	free(g->inputs);
	g->inputs = in;
}

static int opset_of(Imp *m, const Onnx__ModelProto *mp)
{
	m->opset = -1;
	for (size_t i = 0; i < mp->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
		if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx"))
			m->opset = (int)o->version;
	}
	if (m->opset < 0)
		return imp_fail(m, "models without the default ONNX domain (only %.60s) are not "
				"supported", mp->n_opset_import && mp->opset_import[0]->domain
				? mp->opset_import[0]->domain : "none");
	if (m->opset < ONNX_OPSET_MIN || m->opset > ONNX_OPSET_MAX)
		return imp_fail(m, "opset %d is not supported (opsets %d to %d are)", m->opset,
				ONNX_OPSET_MIN, ONNX_OPSET_MAX);
	return 0;
}

/* Every --input-shape names an input whose shape the user gives: not an unknown
 * name (a typo would leave the shape the model says), nor an initializer (a constant:
 * its shape is its data's). Checked before the inputs, so that a misspelt name is
 * what the error says, not the symbolic dim it failed to fix. */
static int check_shape_names(Imp *m, const Onnx__GraphProto *gp)
{
	for (int i = 0; m->opt && i < m->opt->nshapes; i++) {
		const char *want = m->opt->shapes[i].name;
		bool found = false;
		for (size_t k = 0; k < gp->n_input && !found; k++)
			found = gp->input[k]->name && !strcmp(gp->input[k]->name, want);
		if (found && imp_map_get(&m->vals, want))
			return imp_fail(m, "--input-shape: input '%.80s' is an initializer (a "
					"constant): its shape is its data's", want);
		if (found)
			continue;
		/* the inputs the model has, to choose from */
		Buf b = {0};
		int n = 0;
		for (size_t k = 0; k < gp->n_input; k++) {
			const char *nm = gp->input[k]->name;
			if (bad_name(nm) || imp_map_get(&m->vals, nm))
				continue;
			if (n < 6)
				buf_printf(&b, "%s'%.40s'", n ? ", " : "", nm);
			n++;
		}
		if (n > 6)
			buf_printf(&b, " and %d more", n - 6);
		imp_fail(m, "--input-shape: the model has no input '%.80s' (%s%s)", want,
			 n ? "its inputs: " : "it has no inputs to shape", n ? b.data : "");
		free(b.data);
		return -1;
	}
	return 0;
}

static int import_graph(Imp *m, const Onnx__GraphProto *gp)
{
	Graph *g = m->g;
	for (size_t i = 0; i < gp->n_initializer; i++) {
		const Onnx__TensorProto *tp = gp->initializer[i];
		if (bad_name(tp->name))
			return imp_fail(m, "initializer %zu has an empty or bad name", i);
		HostTensor k;
		char msg[400];
		int rc = onnx_tensor_borrow(tp, m->dir, &k, msg, sizeof msg);
		if (rc < 0)
			return imp_fail(m, "initializer '%.80s': %s", tp->name, msg);
		/* folding may touch each value the model carries a few times (a transposed
		 * weight: read once, written once) beyond the fixed budget */
		int64_t more;
		if (__builtin_mul_overflow(k.n, (int64_t)IMP_FOLD_PER_VALUE, &more) ||
		    __builtin_add_overflow(m->fold_budget, more, &m->fold_budget))
			m->fold_budget = INT64_MAX;
		Val *v = imp_const(m, &k);
		v->borrowed = rc == 1;
		if (bind(m, tp->name, v))
			return -1;
	}
	if (check_shape_names(m, gp))
		return -1;
	/* a model read for every size: the dim_params --input-shape fixes, by name */
	for (size_t i = 0; m->every && i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		const Onnx__TypeProto *tp = vi->type;
		if (!vi->name || !tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
		    !tp->tensor_type || !tp->tensor_type->shape)
			continue;
		const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
		for (int k = 0; k < m->opt->nshapes; k++) {
			const OnnxInputShape *f = &m->opt->shapes[k];
			if (strcmp(f->name, vi->name) || (size_t)f->rank != sh->n_dim)
				continue;
			for (size_t j = 0; j < sh->n_dim && m->every->nfixed < IR_SYM_MAX * 4; j++) {
				const Onnx__TensorShapeProto__Dimension *dm = sh->dim[j];
				if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
				    dm->dim_param && dm->dim_param[0]) {
					m->every->fixed_name[m->every->nfixed] = dm->dim_param;
					m->every->fixed[m->every->nfixed++] = f->dim[j];
				}
			}
		}
	}
	for (size_t i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		if (bad_name(vi->name))
			return imp_fail(m, "graph input %zu has an empty or bad name", i);
		if (imp_map_get(&m->vals, vi->name))
			continue;  /* an initializer: a constant (its default value) */
		const HostTensor *given = NULL;
		for (int k = 0; m->opt && k < m->opt->nvalues; k++)
			if (!strcmp(m->opt->values[k].name, vi->name))
				given = m->opt->values[k].value;
		if (given) {
			HostTensor c;
			Diag hd;
			if (host_alloc(&c, given->dtype, given->rank, given->dim, &hd))
				return imp_fail(m, "input '%.80s': %s", vi->name, hd.msg);
			memcpy(c.data, given->data,
			       (size_t)c.n * (size_t)ir_dtype_size(c.dtype));
			if (bind(m, vi->name, imp_const(m, &c)))
				return -1;
			continue;
		}
		DType dt = DT_F32;
		int rank = 0;
		int64_t dim[IR_MAX_RANK] = {0};
		int8_t symof[IR_MAX_RANK];
		if (input_shape(m, vi, &dt, &rank, dim, symof))
			return -1;
		Val *v = imp_graph_input(m, vi->name, dt, rank, dim);
		if (!v)
			return -1;
		if (m->every) {
			OnnxEvery *e = m->every;
			if (v->tensor >= e->cin) {
				int c = e->cin;
				e->cin = 2 * v->tensor + 16;
				e->insym = xrealloc(e->insym, (size_t)e->cin * IR_MAX_RANK);
				memset(e->insym + (size_t)c * IR_MAX_RANK, -1,
				       (size_t)(e->cin - c) * IR_MAX_RANK);
			}
			memcpy(e->insym + (size_t)v->tensor * IR_MAX_RANK, symof, IR_MAX_RANK);
		}
		imp_map_put(&m->vals, vi->name, v);
		imp_map_put(&m->used, vi->name, v);
	}
	if (run_nodes(m, gp))
		return -1;
	m->node = -1;
	if (!gp->n_output)
		return imp_fail(m, "the graph has no outputs");
	g->outputs = ARENA_NEW(g->arena, int, gp->n_output);
	for (size_t i = 0; i < gp->n_output; i++) {
		if (bad_name(gp->output[i]->name))
			return imp_fail(m, "graph output %zu has an empty or bad name", i);
		if (add_output(m, gp->output[i]->name))
			return -1;
	}
	name_rest(m);
	return 0;
}

/* protobuf-c's allocator for the model: blocks of ONNX_ARENA_MIN bytes and more (the
 * bytes of tensors) come unzeroed from the graph's arena, so an initializer becomes
 * a graph constant without a copy (onnx_tensor_borrow); smaller ones from malloc. A
 * 16-byte header says which, for pb_free. */
static void *pb_alloc(void *data, size_t size)
{
	unsigned char *p;
	if (size >= ONNX_ARENA_MIN) {
		p = arena_alloc_raw(data, size + 16);
		p[0] = 1;
	} else {
		p = malloc(size + 16);
		if (!p)
			return NULL;
		p[0] = 0;
	}
	return p + 16;
}

static void pb_free(void *data, void *ptr)
{
	unsigned char *p = ptr;
	if (p && !p[-16])
		free(p - 16);
}

/* Import mp's graph into a, each dim_param of every (or NULL) at its probe size. */
static Graph *import_model(Arena *a, const char *file, const char *dir,
			   const Onnx__ModelProto *mp, const OnnxOptions *o, OnnxEvery *every,
			   Diag *d)
{
	Imp m = {.a = a, .tmp = arena_new(), .d = d, .file = file, .dir = dir, .opt = o,
		 .node = -1, .fold_budget = IMP_FOLD_WORK, .every = every};
	Graph *g = ARENA_NEW(a, Graph, 1);
	g->arena = a;
	g->file = arena_strdup(a, file);
	g->name = default_name(a, file);
	g->nstreams = 1;
	m.g = g;
	int rc = -1;
	if (!mp->graph)
		imp_fail(&m, "the model has no graph");
	else if (mp->graph->n_sparse_initializer)
		imp_fail(&m, "sparse initializers are not supported");
	else if (!opset_of(&m, mp))
		rc = import_graph(&m, mp->graph);
	if (!rc) {
		settle(&m);
		/* names were borrowed from the protobuf: copy them before it goes */
		for (int i = 0; i < g->ntensors; i++) {
			Tensor *t = &g->tensors[i];
			t->name = arena_strdup(a, t->name);
			t->role = t->producer < 0 ? ROLE_INPUT : t->is_output ? ROLE_OUTPUT
									      : ROLE_INTERMEDIATE;
		}
	} else {
		free(g->tensors);
		free(g->ops);
		free(g->inputs);
	}
	for (size_t i = 0; i < m.nconsts; i++)
		if (!m.consts[i]->borrowed)
			host_free(&m.consts[i]->k);
	free(m.consts);
	free(m.hint);
	imp_map_free(&m.vals);
	imp_map_free(&m.used);
	arena_free(m.tmp);
	if (rc)
		return NULL;
	ir_finish(g);
	return g;
}

/* A model read for every size (OnnxOptions.lookup->symbolic): imported twice, the
 * dim_params at two sets of probe sizes (ir_sym_probe), and the two graphs compared
 * (every.c). */
static Graph *import_every_size(Arena *a, const char *file, const char *dir,
				const Onnx__ModelProto *mp, const OnnxOptions *o, Diag *d)
{
	OnnxEvery ea = {0}, eb = {0};
	Graph *g = import_model(a, file, dir, mp, o, &ea, d);
	for (int r = 0; g && r < o->lookup->nranges; r++)
		if (!ea.used[r]) {
			diag_set(d, file, 0, 0, "--dims: no input of the model has the dim_param "
				 "'%.80s'", o->lookup->ranges[r].name);
			g = NULL;
		}
	if (g && ea.nsym) {
		Arena *tb = arena_new();
		eb.first = ea.probe;
		eb.nfirst = ea.nsym;
		Graph *gb = import_model(tb, file, dir, mp, o, &eb, d);
		if (!gb || onnx_every_diff(g, gb, &ea, eb.probe, d))
			g = NULL;
		arena_free(tb);
	}
	free(ea.insym);
	free(eb.insym);
	return g;
}

Graph *onnx_import_bytes(Arena *a, const char *file, const char *dir, const void *buf,
			 size_t len, bool own, const OnnxOptions *o, Diag *d)
{
	ProtobufCAllocator pa = {pb_alloc, pb_free, a};
	memset(d, 0, sizeof *d);
	char msg[200];
	Onnx__ModelProto *mp = onnx_unpack(&pa, buf, len, msg, sizeof msg);
	if (own)
		free((void *)buf);
	if (!mp) {
		diag_set(d, file, 0, 0, "%s", msg);
		return NULL;
	}
	Graph *g = o && o->lookup && o->lookup->symbolic
			   ? import_every_size(a, file, dir, mp, o, d)
			   : import_model(a, file, dir, mp, o, NULL, d);
	onnx__model_proto__free_unpacked(mp, &pa);
	return g;
}
