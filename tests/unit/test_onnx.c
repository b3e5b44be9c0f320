/* test_onnx.c: the ONNX reader (onnx/): models built here with the generated
 * protobuf-c structs, packed to bytes and imported.
 *
 * Checks what the import produces (constants, folded shape chains, decompositions
 * run through the interpreter against hand-computed values), the errors a user
 * meets (an unmapped op names the op, node and opset; a symbolic dim names the
 * input and is fixed by an input shape), external data beside the model (and
 * paths that leave its folder), and hostile bytes: every truncation of a valid
 * model and seeded random corruptions must fail cleanly or import, never crash
 * (the sanitizer build runs this too). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../host/interp.h"
#include "../../onnx/ops.h"
#include "../../onnx/onnx.h"
#include "onnx.pb-c.h"
#include "test.h"

/* ---- building models -------------------------------------------------------------- */

typedef struct {
	Onnx__ModelProto model;
	Onnx__GraphProto graph;
	Onnx__OperatorSetIdProto opset, *opsets[1];
	Onnx__NodeProto nodes[16], *pnodes[16];
	Onnx__ValueInfoProto vis[16], *pin[8], *pout[8];
	Onnx__TypeProto types[16];
	Onnx__TypeProto__Tensor tts[16];
	Onnx__TensorShapeProto shapes[16];
	Onnx__TensorShapeProto__Dimension dims[16][4], *pdims[16][4];
	Onnx__TensorProto inits[8], *pinits[8];
	Onnx__AttributeProto attrs[16], *pattrs[16];
	int nvi, nattr;
} Model;

static void model_init(Model *m, int opset)
{
	memset(m, 0, sizeof *m);
	onnx__model_proto__init(&m->model);
	onnx__graph_proto__init(&m->graph);
	onnx__operator_set_id_proto__init(&m->opset);
	m->model.has_ir_version = 1;
	m->model.ir_version = 8;
	m->opset.has_version = 1;
	m->opset.version = opset;
	m->opset.domain = "";
	m->opsets[0] = &m->opset;
	m->model.n_opset_import = 1;
	m->model.opset_import = m->opsets;
	m->model.graph = &m->graph;
	m->graph.name = "g";
	m->graph.node = m->pnodes;
	m->graph.input = m->pin;
	m->graph.output = m->pout;
	m->graph.initializer = m->pinits;
}

/* A float value info; dims < 0 are symbolic ("N"). */
static Onnx__ValueInfoProto *value_info(Model *m, const char *name, int rank, const int64_t *d)
{
	int k = m->nvi++;
	Onnx__ValueInfoProto *v = &m->vis[k];
	onnx__value_info_proto__init(v);
	onnx__type_proto__init(&m->types[k]);
	onnx__type_proto__tensor__init(&m->tts[k]);
	onnx__tensor_shape_proto__init(&m->shapes[k]);
	v->name = (char *)name;
	v->type = &m->types[k];
	m->types[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	m->types[k].tensor_type = &m->tts[k];
	m->tts[k].has_elem_type = 1;
	m->tts[k].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	m->tts[k].shape = &m->shapes[k];
	m->shapes[k].n_dim = (size_t)rank;
	m->shapes[k].dim = m->pdims[k];
	for (int i = 0; i < rank; i++) {
		Onnx__TensorShapeProto__Dimension *dm = &m->dims[k][i];
		onnx__tensor_shape_proto__dimension__init(dm);
		if (d[i] < 0) {
			dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			dm->dim_param = "N";
		} else {
			dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			dm->dim_value = d[i];
		}
		m->pdims[k][i] = dm;
	}
	return v;
}

static void add_input(Model *m, const char *name, int rank, const int64_t *d)
{
	m->pin[m->graph.n_input++] = value_info(m, name, rank, d);
}

static void add_output(Model *m, const char *name)
{
	m->pout[m->graph.n_output++] = value_info(m, name, 0, NULL);
}

static Onnx__NodeProto *add_node(Model *m, const char *op, int nin, char **in, int nout,
				 char **out)
{
	Onnx__NodeProto *n = &m->nodes[m->graph.n_node];
	onnx__node_proto__init(n);
	n->op_type = (char *)op;
	n->n_input = (size_t)nin;
	n->input = in;
	n->n_output = (size_t)nout;
	n->output = out;
	n->name = (char *)out[0];
	m->pnodes[m->graph.n_node++] = n;
	return n;
}

static void node_int(Model *m, Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = &m->attrs[m->nattr];
	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	a->has_i = 1;
	a->i = v;
	m->pattrs[m->nattr] = a;
	if (!n->attribute)
		n->attribute = &m->pattrs[m->nattr];
	n->n_attribute++;
	m->nattr++;
}

/* A float (or int64 when ints) initializer with raw data. */
static void add_init(Model *m, const char *name, int rank, int64_t *dims, const void *data,
		     size_t bytes, bool ints)
{
	Onnx__TensorProto *t = &m->inits[m->graph.n_initializer];
	onnx__tensor_proto__init(t);
	t->name = (char *)name;
	t->n_dims = (size_t)rank;
	t->dims = dims;
	t->has_data_type = 1;
	t->data_type = ints ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64
			    : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	t->has_raw_data = 1;
	t->raw_data.len = bytes;
	t->raw_data.data = (uint8_t *)data;
	m->pinits[m->graph.n_initializer++] = t;
}

static uint8_t *pack(Model *m, size_t *len)
{
	*len = onnx__model_proto__get_packed_size(&m->model);
	uint8_t *buf = malloc(*len + 1);
	onnx__model_proto__pack(&m->model, buf);
	return buf;
}

static Graph *import(Arena *a, Model *m, const OnnxOptions *o, Diag *d)
{
	size_t len;
	uint8_t *buf = pack(m, &len);
	Graph *g = onnx_read_mem(a, "m.onnx", buf, len, o, d);
	free(buf);
	return g;
}

/* x [2,3] + w (initializer [3]) -> relu -> y */
static char *in_add[] = {"x", "w"}, *out_add[] = {"s"}, *in_relu[] = {"s"}, *out_y[] = {"y"};
static int64_t d23[] = {2, 3}, d3[] = {3};
static const float wvals[3] = {1, -2, 0.5f};

static void add_relu_model(Model *m)
{
	model_init(m, 17);
	add_input(m, "x", 2, d23);
	add_init(m, "w", 1, d3, wvals, sizeof wvals, false);
	add_node(m, "Add", 2, in_add, 1, out_add);
	add_node(m, "Relu", 1, in_relu, 1, out_y);
	add_output(m, "y");
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_initializer_constant_and_run(void **state)
{
	(void)state;
	Model m;
	add_relu_model(&m);
	Arena *a = arena_new();
	Diag d;
	Graph *g = import(a, &m, NULL, &d);
	assert_non_null(g);
	assert_int_equal(g->ninputs, 2);
	assert_int_equal(g->nops, 2);   /* add, relu: w reshaped to [1,3] at import */
	const Tensor *w = NULL;
	for (int i = 0; i < g->ninputs; i++)
		if (g->tensors[g->inputs[i]].data)
			w = &g->tensors[g->inputs[i]];
	assert_non_null(w);
	assert_int_equal(w->rank, 2);
	assert_int_equal(w->dim[0], 1);
	assert_memory_equal(w->data, wvals, sizeof wvals);
	assert_string_equal(g->tensors[g->outputs[0]].name, "y");

	HostTensor in[2] = {{0}}, out[1] = {{0}};
	for (int i = 0; i < 2; i++) {
		const Tensor *t = &g->tensors[g->inputs[i]];
		assert_int_equal(host_alloc(&in[i], t->dtype, t->rank, t->dim, &d), 0);
		if (t->data)
			memcpy(in[i].data, t->data, (size_t)in[i].n * 4);
		else
			for (int k = 0; k < 6; k++)
				host_set(&in[i], k, k - 2);
	}
	assert_int_equal(interp_run(g, in, out, &d), 0);
	/* x = [-2,-1,0,1,2,3]; + [1,-2,.5] per row; relu */
	const double want[6] = {0, 0, 0.5, 2, 0, 3.5};
	for (int k = 0; k < 6; k++)
		assert_true(host_get(&out[0], k) == want[k]);
	host_free(&in[0]);
	host_free(&in[1]);
	host_free(&out[0]);
	arena_free(a);
}

/* Shape -> Gather -> Unsqueeze -> Concat -> Reshape folds to one reshape. */
static void test_shape_chain_folds(void **state)
{
	(void)state;
	static char *i0[] = {"x"}, *o0[] = {"shp"};
	static char *i1[] = {"shp", "idx"}, *o1[] = {"d0"};
	static char *i2[] = {"d0", "ax"}, *o2[] = {"d0u"};
	static char *i3[] = {"d0u", "minus1"}, *o3[] = {"newshape"};
	static char *i4[] = {"x", "newshape"}, *o4[] = {"y"};
	static int64_t idx = 0, ax = 0, minus1 = -1, d1[] = {1}, d0[] = {0};
	static int64_t dx[] = {4, 2, 3};
	Model m;
	model_init(&m, 13);
	add_input(&m, "x", 3, dx);
	add_init(&m, "idx", 0, d0, &idx, 8, true);
	add_init(&m, "ax", 1, d1, &ax, 8, true);
	add_init(&m, "minus1", 1, d1, &minus1, 8, true);
	add_node(&m, "Shape", 1, i0, 1, o0);
	add_node(&m, "Gather", 2, i1, 1, o1);
	add_node(&m, "Unsqueeze", 2, i2, 1, o2);
	Onnx__NodeProto *c = add_node(&m, "Concat", 2, i3, 1, o3);
	node_int(&m, c, "axis", 0);
	add_node(&m, "Reshape", 2, i4, 1, o4);
	add_output(&m, "y");
	Arena *a = arena_new();
	Diag d;
	Graph *g = import(a, &m, NULL, &d);
	assert_non_null(g);
	assert_int_equal(g->nops, 1);
	assert_int_equal(g->ops[0].kind, OP_RESHAPE);
	const Tensor *y = &g->tensors[g->outputs[0]];
	assert_int_equal(y->rank, 2);
	assert_int_equal(y->dim[0], 4);
	assert_int_equal(y->dim[1], 6);
	arena_free(a);
}

static void test_unmapped_op_error(void **state)
{
	(void)state;
	static char *i0[] = {"x"}, *o0[] = {"y"};
	static int64_t dx[] = {2};
	Model m;
	model_init(&m, 15);
	add_input(&m, "x", 1, dx);
	add_node(&m, "Relu", 1, i0, 1, o0);
	static char *o1[] = {"z"}, *i1[] = {"y"};
	add_node(&m, "NoSuchOp", 1, i1, 1, o1);
	add_output(&m, "z");
	Arena *a = arena_new();
	Diag d;
	assert_null(import(a, &m, NULL, &d));
	assert_string_equal(d.msg, "node 1 'z' (NoSuchOp, opset 15): op NoSuchOp has no mapping "
				   "to fusec ops yet");
	arena_free(a);
}

static void test_symbolic_dim_and_input_shape(void **state)
{
	(void)state;
	static int64_t dyn[] = {-1, 3};
	Model m;
	add_relu_model(&m);
	m.pin[0] = value_info(&m, "x", 2, dyn);
	Arena *a = arena_new();
	Diag d;
	assert_null(import(a, &m, NULL, &d));
	assert_string_equal(d.msg, "input 'x' dim 0 ('N') is not static: fix the shape with "
				   "--input-shape x=DxD...");
	OnnxInputShape s;
	char msg[200];
	assert_int_equal(ir_parse_shape(a, "x=5x3", &s, msg, sizeof msg), 0);
	OnnxOptions o = {&s, 1, NULL, 0, NULL};
	Graph *g = import(a, &m, &o, &d);
	assert_non_null(g);
	assert_int_equal(g->tensors[g->outputs[0]].dim[0], 5);
	/* a shape that contradicts the model */
	assert_int_equal(ir_parse_shape(a, "x=5x4", &s, msg, sizeof msg), 0);
	assert_null(import(a, &m, &o, &d));
	assert_string_equal(d.msg, "--input-shape x gives dim 1 = 4, the model fixes it to 3");
	assert_int_equal(ir_parse_shape(a, "x=5y3", &s, msg, sizeof msg), -1);
	assert_int_equal(ir_parse_shape(a, "=5", &s, msg, sizeof msg), -1);
	assert_int_equal(ir_parse_shape(a, "x=0x3", &s, msg, sizeof msg), -1);
	/* a name that fixes nothing (issue 25): an initializer listed as an input was
	 * left as it was, and a misspelt name was reported as the dim it did not fix */
	OnnxInputShape two[2];
	assert_int_equal(ir_parse_shape(a, "x=5x3", &two[0], msg, sizeof msg), 0);
	assert_int_equal(ir_parse_shape(a, "w=7", &two[1], msg, sizeof msg), 0);
	m.pin[m.graph.n_input++] = value_info(&m, "w", 1, d3);
	OnnxOptions o2 = {two, 2, NULL, 0, NULL};
	assert_null(import(a, &m, &o2, &d));
	assert_string_equal(d.msg, "--input-shape: input 'w' is an initializer (a constant): its "
				   "shape is its data's");
	assert_int_equal(ir_parse_shape(a, "X=5x3", &two[1], msg, sizeof msg), 0);
	o2.shapes = &two[1];
	o2.nshapes = 1;
	assert_null(import(a, &m, &o2, &d));
	assert_string_equal(d.msg, "--input-shape: the model has no input 'X' (its inputs: 'x')");
	arena_free(a);
}

static void test_external_data(void **state)
{
	(void)state;
	char dir[] = "/tmp/fusec-onnx-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/w.bin", dir);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fwrite("pad!", 1, 4, f);
	fwrite(wvals, 1, sizeof wvals, f);
	fclose(f);
	Model m;
	add_relu_model(&m);
	Onnx__TensorProto *t = &m.inits[0];
	Onnx__StringStringEntryProto e[3], *pe[3];
	const char *keys[3] = {"location", "offset", "length"};
	char *vals[3] = {"w.bin", "4", "12"};
	for (int i = 0; i < 3; i++) {
		onnx__string_string_entry_proto__init(&e[i]);
		e[i].key = (char *)keys[i];
		e[i].value = vals[i];
		pe[i] = &e[i];
	}
	t->has_raw_data = 0;
	t->n_external_data = 3;
	t->external_data = pe;
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	size_t len;
	uint8_t *buf = pack(&m, &len);
	snprintf(path, sizeof path, "%s/m.onnx", dir);
	f = fopen(path, "wb");
	fwrite(buf, 1, len, f);
	fclose(f);
	Arena *a = arena_new();
	Diag d;
	Graph *g = onnx_read_file(a, path, NULL, &d);
	if (!g)
		fail_msg("%s", d.msg);
	bool found = false;
	for (int i = 0; i < g->ninputs; i++)
		if (g->tensors[g->inputs[i]].data) {
			assert_memory_equal(g->tensors[g->inputs[i]].data, wvals, sizeof wvals);
			found = true;
		}
	assert_true(found);
	/* the depfile's list (compile -M): the one external file, beside the model */
	const char **files;
	assert_int_equal(onnx_external_files(a, path, &files), 1);
	char want[300];
	snprintf(want, sizeof want, "%s/w.bin", dir);
	assert_string_equal(files[0], want);
	/* from memory there is no folder to read from */
	assert_null(onnx_read_mem(a, "m.onnx", buf, len, NULL, &d));
	assert_non_null(strstr(d.msg, "not read from a file"));
	free(buf);
	/* a location outside the model's folder, and one past the end of the file */
	const char *bad[2][2] = {{"../w.bin", "leaves the model's folder"},
				 {"w.bin", "shorter than"}};
	for (int k = 0; k < 2; k++) {
		e[0].value = (char *)bad[k][0];
		e[1].value = k ? "8" : "4";
		buf = pack(&m, &len);
		f = fopen(path, "wb");
		fwrite(buf, 1, len, f);
		fclose(f);
		free(buf);
		assert_null(onnx_read_file(a, path, NULL, &d));
		assert_non_null(strstr(d.msg, bad[k][1]));
	}
	unlink(path);
	snprintf(path, sizeof path, "%s/w.bin", dir);
	unlink(path);
	rmdir(dir);
	arena_free(a);
}

/* Every prefix of a valid model, and seeded random corruptions of it, fail with a
 * message or import; none may crash or leak (ASan). */
static void test_hostile_bytes(void **state)
{
	(void)state;
	Model m;
	add_relu_model(&m);
	size_t len;
	uint8_t *good = pack(&m, &len);
	uint8_t *buf = malloc(len);
	int ok = 0, failed = 0;
	for (size_t n = 0; n < len; n++) {
		Arena *a = arena_new();
		Diag d;
		Graph *g = onnx_read_mem(a, "t.onnx", good, n, NULL, &d);
		g ? ok++ : failed++;
		if (!g)
			assert_true(d.msg[0] != 0);
		arena_free(a);
	}
	assert_true(failed > 0);
	uint64_t s = 12345;
	for (int round = 0; round < 3000; round++) {
		memcpy(buf, good, len);
		int flips = 1 + round % 4;
		for (int k = 0; k < flips; k++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			buf[(s >> 33) % len] = (uint8_t)(s >> 17);
		}
		Arena *a = arena_new();
		Diag d;
		Graph *g = onnx_read_mem(a, "t.onnx", buf, len, NULL, &d);
		if (!g)
			assert_true(d.msg[0] != 0);
		arena_free(a);
	}
	/* not protobuf at all */
	Arena *a = arena_new();
	Diag d;
	assert_null(onnx_read_mem(a, "t.onnx", "{\"format\": 1}", 13, NULL, &d));
	assert_non_null(strstr(d.msg, "not a valid ONNX model"));
	arena_free(a);
	free(buf);
	free(good);
}

/* Initializers whose data disagree with their dims, and bad element types. */
static void test_bad_initializers(void **state)
{
	(void)state;
	Model m;
	add_relu_model(&m);
	Arena *a = arena_new();
	Diag d;
	m.inits[0].raw_data.len = 8;   /* 2 floats for dims [3] */
	assert_null(import(a, &m, NULL, &d));
	assert_string_equal(d.msg, "initializer 'w': holds 2 elements, its dims need 3");
	m.inits[0].raw_data.len = 12;
	m.inits[0].data_type = ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
	assert_null(import(a, &m, NULL, &d));
	assert_string_equal(d.msg, "initializer 'w': element type STRING is not supported yet");
	m.inits[0].data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	int64_t neg[1] = {-3};
	m.inits[0].dims = neg;
	assert_null(import(a, &m, NULL, &d));
	assert_string_equal(d.msg, "initializer 'w': negative dim -3");
	arena_free(a);
}

/* The scatters' constant indices: a negative index counts from the end, one out of
 * range is refused with its value and dim, in ScatterElements and in ScatterND. */
static void test_scatter_indices(void **state)
{
	(void)state;
	static char *in_se[] = {"x", "i", "u"}, *out_se[] = {"y"};
	static int64_t d4[] = {4}, d2[] = {2}, d21[] = {2, 1};
	static const float upd[2] = {5, 6};
	for (int nd = 0; nd < 2; nd++) {
		for (int bad = 0; bad < 2; bad++) {
			int64_t idx[2] = {-1, bad ? 4 : 1};
			Model m;
			model_init(&m, 18);
			add_input(&m, "x", 1, d4);
			add_init(&m, "i", nd ? 2 : 1, nd ? d21 : d2, idx, sizeof idx, true);
			add_init(&m, "u", 1, d2, upd, sizeof upd, false);
			add_node(&m, nd ? "ScatterND" : "ScatterElements", 3, in_se, 1, out_se);
			add_output(&m, "y");
			Arena *a = arena_new();
			Diag d;
			Graph *g = import(a, &m, NULL, &d);
			if (bad) {
				assert_null(g);
				assert_non_null(strstr(d.msg, "index 4 is out of range for dim 4"));
			} else {
				assert_non_null(g);
			}
			arena_free(a);
		}
	}
}

/* The importer's bounds (fuzzing, issue 15): a graph input whose element count or
 * byte size overflows int64 and one over --max-elements are refused with a message;
 * an int64 Range whose values overflow is refused; a constant a handler would make
 * (a Slice's index table) over IMP_MAX_MADE elements is "not supported yet"; and
 * an op on constants too costly to fold stays in the graph, without the import
 * allocating its result (an Expand of a scalar to 2^32 elements: 16 GB). */
static void test_import_bounds(void **state)
{
	(void)state;
	static char *i_relu[] = {"x"}, *o_relu[] = {"y"};
	static int64_t huge[] = {(int64_t)1 << 32, (int64_t)1 << 32};
	static int64_t bytes[] = {(int64_t)1 << 31, (int64_t)1 << 31};
	static int64_t d20[] = {20, 20};
	Arena *a = arena_new();
	Diag d;
	Model m;
	model_init(&m, 17);
	add_input(&m, "x", 2, huge);
	add_node(&m, "Relu", 1, i_relu, 1, o_relu);
	add_output(&m, "y");
	assert_null(import(a, &m, NULL, &d));
	assert_non_null(strstr(d.msg, "input 'x': shape [4294967296,4294967296] has more "
				      "elements than fit 64 bits"));
	m.dims[0][0].dim_value = bytes[0];
	m.dims[0][1].dim_value = bytes[1];
	assert_null(import(a, &m, NULL, &d));
	assert_non_null(strstr(d.msg, "overflows a 64-bit byte size"));
	m.dims[0][0].dim_value = d20[0];
	m.dims[0][1].dim_value = d20[1];
	int64_t old = ir_limits.max_elements;
	ir_limits.max_elements = 500;   /* x and y: 800 elements */
	assert_null(import(a, &m, NULL, &d));
	ir_limits.max_elements = old;
	assert_non_null(strstr(d.msg, "more than 500 elements in all, the limit "
				      "(--max-elements)"));
	assert_non_null(import(a, &m, NULL, &d));

	/* an int64 Range over the whole int64 line: i · delta passes int64 (3 · 2^62)
	 * where start + i · delta does not (signed overflow before, seen by UBSan) */
	static char *i_range[] = {"s", "l", "dl"}, *o_range[] = {"y"};
	static int64_t s0 = INT64_MIN, l0 = INT64_MAX, dl0 = (int64_t)1 << 62, d0[] = {0};
	model_init(&m, 17);
	add_init(&m, "s", 0, d0, &s0, 8, true);
	add_init(&m, "l", 0, d0, &l0, 8, true);
	add_init(&m, "dl", 0, d0, &dl0, 8, true);
	add_node(&m, "Range", 3, i_range, 1, o_range);
	add_output(&m, "y");
	Graph *g = import(a, &m, NULL, &d);
	assert_non_null(g);
	const Tensor *r = &g->tensors[g->outputs[0]];
	assert_int_equal(r->dim[0], 4);
	const int64_t *rv = r->data;
	assert_true(rv[0] == INT64_MIN && rv[1] == -((int64_t)1 << 62) && rv[2] == 0 &&
		    rv[3] == (int64_t)1 << 62);

	/* a Slice with step 2 over 2^28 elements: an index table of 2^27 entries */
	static char *i_sl[] = {"x", "st", "en", "ax", "sp"}, *o_sl[] = {"y"};
	static int64_t dbig[] = {1, (int64_t)1 << 28}, st = 0, en = INT64_MAX, ax = 1, sp = 2;
	static int64_t d1[] = {1};
	model_init(&m, 17);
	add_input(&m, "x", 2, dbig);
	add_init(&m, "st", 1, d1, &st, 8, true);
	add_init(&m, "en", 1, d1, &en, 8, true);
	add_init(&m, "ax", 1, d1, &ax, 8, true);
	add_init(&m, "sp", 1, d1, &sp, 8, true);
	add_node(&m, "Slice", 5, i_sl, 1, o_sl);
	add_output(&m, "y");
	assert_null(import(a, &m, NULL, &d));
	assert_non_null(strstr(d.msg, "more than 67108864 elements: not supported yet"));

	/* Expand of a constant scalar to [65536, 65536]: kept as an op, not folded */
	static char *i_ex[] = {"c", "shape"}, *o_ex[] = {"y"};
	static const float one = 1;
	static int64_t shape[] = {65536, 65536}, d2[] = {2};
	model_init(&m, 17);
	add_init(&m, "c", 0, d0, &one, 4, false);
	add_init(&m, "shape", 1, d2, shape, sizeof shape, true);
	add_node(&m, "Expand", 2, i_ex, 1, o_ex);
	add_output(&m, "y");
	g = import(a, &m, NULL, &d);
	assert_non_null(g);
	assert_int_equal(g->nops, 1);
	assert_int_equal(g->ops[0].kind, OP_EXPAND);
	assert_int_equal(g->tensors[g->outputs[0]].dim[0], 65536);

	/* ConstantOfShape whose value is an empty tensor (was read past its end) */
	static char *i_cs[] = {"shape"}, *o_cs[] = {"y"};
	static int64_t empty_dims[] = {0}, small[] = {2, 3};
	model_init(&m, 17);
	add_init(&m, "shape", 1, d2, small, sizeof small, true);
	Onnx__NodeProto *cs = add_node(&m, "ConstantOfShape", 1, i_cs, 1, o_cs);
	Onnx__TensorProto val;
	onnx__tensor_proto__init(&val);
	val.n_dims = 1;
	val.dims = empty_dims;
	val.has_data_type = 1;
	val.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	val.has_raw_data = 1;
	val.raw_data.len = 0;
	Onnx__AttributeProto *va = &m.attrs[m.nattr];
	onnx__attribute_proto__init(va);
	va->name = "value";
	va->has_type = 1;
	va->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	va->t = &val;
	m.pattrs[m.nattr] = va;
	cs->attribute = &m.pattrs[m.nattr++];
	cs->n_attribute = 1;
	add_output(&m, "y");
	assert_null(import(a, &m, NULL, &d));
	assert_non_null(strstr(d.msg, "value holds 0 elements, not one"));

	/* a Constant whose value_floats attribute carries ints (read floats[] before) */
	static char *o_c[] = {"y"};
	static int64_t three[] = {1, 2, 3};
	model_init(&m, 17);
	Onnx__NodeProto *c = add_node(&m, "Constant", 0, NULL, 1, o_c);
	Onnx__AttributeProto *ca = &m.attrs[m.nattr];
	onnx__attribute_proto__init(ca);
	ca->name = "value_floats";
	ca->n_ints = 3;
	ca->ints = three;
	m.pattrs[m.nattr] = ca;
	c->attribute = &m.pattrs[m.nattr++];
	c->n_attribute = 1;
	add_output(&m, "y");
	assert_null(import(a, &m, NULL, &d));
	assert_non_null(strstr(d.msg, "value_floats holds no floats"));
	arena_free(a);
}

/* uint16 and uint32 tensors are held in i32 and i64 (raw and typed data; values
 * above the signed range of their own width stay positive). */
static void test_wide_unsigned(void **state)
{
	(void)state;
	Onnx__TensorProto t;
	onnx__tensor_proto__init(&t);
	int64_t dims[1] = {3};
	t.n_dims = 1;
	t.dims = dims;
	t.has_data_type = 1;
	t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT16;
	const uint16_t r16[3] = {0, 40000, 65535};
	t.has_raw_data = 1;
	t.raw_data.len = sizeof r16;
	t.raw_data.data = (uint8_t *)r16;
	HostTensor h;
	char msg[200];
	assert_int_equal(onnx_tensor(&t, NULL, &h, msg, sizeof msg), 0);
	assert_int_equal(h.dtype, DT_I32);
	assert_int_equal(host_get_i64(&h, 1), 40000);
	assert_int_equal(host_get_i64(&h, 2), 65535);
	host_free(&h);
	t.raw_data.len = 4;   /* 2 elements for dims [3] */
	assert_int_equal(onnx_tensor(&t, NULL, &h, msg, sizeof msg), -1);
	assert_string_equal(msg, "holds 2 elements, its dims need 3");
	int32_t typed16[3] = {1, 50000, 65535};
	t.has_raw_data = 0;
	t.n_int32_data = 3;
	t.int32_data = typed16;
	assert_int_equal(onnx_tensor(&t, NULL, &h, msg, sizeof msg), 0);
	assert_int_equal(host_get_i64(&h, 1), 50000);
	host_free(&h);
	t.n_int32_data = 0;
	t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT32;
	uint64_t typed32[3] = {7, 3000000000u, 4294967295u};
	t.n_uint64_data = 3;
	t.uint64_data = typed32;
	assert_int_equal(onnx_tensor(&t, NULL, &h, msg, sizeof msg), 0);
	assert_int_equal(h.dtype, DT_I64);
	assert_int_equal(host_get_i64(&h, 1), 3000000000LL);
	assert_int_equal(host_get_i64(&h, 2), 4294967295LL);
	host_free(&h);
	const uint32_t r32[3] = {1, 2147483648u, 4294967295u};
	t.n_uint64_data = 0;
	t.has_raw_data = 1;
	t.raw_data.len = sizeof r32;
	t.raw_data.data = (uint8_t *)r32;
	assert_int_equal(onnx_tensor(&t, NULL, &h, msg, sizeof msg), 0);
	assert_int_equal(host_get_i64(&h, 1), 2147483648LL);
	assert_int_equal(host_get_i64(&h, 2), 4294967295LL);
	host_free(&h);
}

/* A large initializer (its bytes unpacked into the graph's arena and used in
 * place) keeps its values after the model's bytes are gone; a small one is copied. */
static void test_large_initializer(void **state)
{
	(void)state;
	enum { N = 3000 };
	static float big[N];
	static int64_t dbig[2] = {1000, 3};
	for (int i = 0; i < N; i++)
		big[i] = (float)i * 0.5f - 7;
	static char *in_mm[] = {"w", "x"}, *out_mm[] = {"y"};
	static int64_t d32[2] = {3, 2};
	Model m;
	model_init(&m, 17);
	add_input(&m, "x", 2, d32);   /* y = w [1000, 3] x [3, 2] */
	add_init(&m, "w", 2, dbig, big, sizeof big, false);
	add_node(&m, "MatMul", 2, in_mm, 1, out_mm);
	add_output(&m, "y");
	Arena *a = arena_new();
	Diag d;
	Graph *g = import(a, &m, NULL, &d);
	assert_non_null(g);
	const Tensor *w = NULL;
	for (int i = 0; i < g->ninputs; i++)
		if (g->tensors[g->inputs[i]].data)
			w = &g->tensors[g->inputs[i]];
	assert_non_null(w);
	assert_int_equal(w->dim[0], 1000);
	assert_memory_equal(w->data, big, sizeof big);
	arena_free(a);
}

static void test_opset_and_domain(void **state)
{
	(void)state;
	Model m;
	add_relu_model(&m);
	Arena *a = arena_new();
	Diag d;
	m.opset.version = 22;
	assert_null(import(a, &m, NULL, &d));
	assert_string_equal(d.msg, "opset 22 is not supported (opsets 1 to 21 are)");
	m.opset.version = 17;
	m.nodes[1].domain = "com.microsoft";
	assert_null(import(a, &m, NULL, &d));
	assert_string_equal(d.msg, "node 1 'y' (Relu, opset 17): op domain 'com.microsoft' is "
				   "not supported (only the default ONNX domain)");
	arena_free(a);
}

/* wrap(b, at, field): the bytes at b[at..] become field `field` (length-delimited)
 * of a message, written in front of them; returns the new start. */
static size_t wrap(uint8_t *b, size_t at, size_t end, unsigned field)
{
	uint8_t hdr[16];
	size_t n = 0, len = end - at;
	hdr[n++] = (uint8_t)(field << 3 | 2);
	do {
		hdr[n++] = (uint8_t)((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
		len >>= 7;
	} while (len);
	memcpy(b + at - n, hdr, n);
	return at - n;
}

/* protobuf-c unpacks nested messages recursively: 5,000 graphs each in an attribute
 * of a node of the graph above overflowed the stack (issue 25, 138 KB), and so
 * would types in types (a sequence of sequences). Both are refused before the
 * unpack past ONNX_MAX_NESTING levels; a model just within the bound imports. */
static void test_nesting_depth(void **state)
{
	(void)state;
	size_t cap = 1 << 20, end = cap;
	uint8_t *b = malloc(cap);
	Arena *a = arena_new();
	Diag d;
	for (int kind = 0; kind < 2; kind++) {
		size_t at = end;
		for (int i = 0; i < 5000; i++) {
			if (kind == 0) {
				/* GraphProto.node -> NodeProto.attribute -> AttributeProto.g */
				at = wrap(b, at, end, 6);
				at = wrap(b, at, end, 5);
				at = wrap(b, at, end, 1);
			} else {
				/* TypeProto.sequence_type -> Sequence.elem_type */
				at = wrap(b, at, end, 1);
				at = wrap(b, at, end, 4);
			}
		}
		/* ModelProto.graph, or ModelProto.graph.input.type */
		if (kind == 1) {
			at = wrap(b, at, end, 2);
			at = wrap(b, at, end, 11);
		}
		at = wrap(b, at, end, 7);
		assert_null(onnx_read_mem(a, "deep.onnx", b + at, end - at, NULL, &d));
		assert_string_equal(d.msg, "not supported: messages nested more than 100 deep "
					   "(graphs in the attributes of graphs, or types in types)");
	}
	/* model 1, graph 2, then node, attribute and graph per nesting: 32 end at level
	 * 98 and are unpacked (the import then fails on the empty graph), 33 at 101 */
	for (int levels = 32; levels <= 33; levels++) {
		size_t at = end;
		for (int i = 0; i < levels; i++) {
			at = wrap(b, at, end, 6);
			at = wrap(b, at, end, 5);
			at = wrap(b, at, end, 1);
		}
		at = wrap(b, at, end, 7);
		assert_null(onnx_read_mem(a, "ok.onnx", b + at, end - at, NULL, &d));
		assert_true((strstr(d.msg, "nested") != NULL) == (levels == 33));
	}
	free(b);
	arena_free(a);
}

/* ConvTranspose's list attributes hold one value per spatial dim: an output_shape
 * shorter than that was read at v[-1] (issue 25; ASan), and a short strides,
 * dilations or output_padding took 1 for the dims it left out. */
static void test_conv_transpose_attr_lengths(void **state)
{
	(void)state;
	static char *in_ct[] = {"x", "w"}, *out_ct[] = {"y"};
	static int64_t dx[] = {1, 1, 3, 3}, dw[] = {1, 1, 2, 2};
	static const float wv[4] = {1, 2, 3, 4};
	static const struct { const char *name; int n; int64_t v[4]; const char *err; } cases[] = {
		{"output_shape", 1, {5}, "output_shape has 1 values for 2 spatial dims (give 2, "
					 "or 4 with N and C)"},
		{"output_shape", 0, {0}, "output_shape has 0 values for 2 spatial dims"},
		{"output_shape", 3, {1, 5, 5}, "output_shape has 3 values for 2 spatial dims"},
		{"strides", 1, {2}, "strides has 1 values for 2 spatial dims"},
		{"dilations", 1, {1}, "dilations has 1 values for 2 spatial dims"},
		{"output_padding", 1, {0}, "output_padding has 1 values for 2 spatial dims"},
		{"output_shape", 2, {5, 5}, NULL},
		{"output_shape", 4, {1, 1, 5, 5}, NULL},
		{"strides", 2, {2, 2}, NULL},
	};
	for (size_t c = 0; c < COUNTOF(cases); c++) {
		Model m;
		model_init(&m, 17);
		add_input(&m, "x", 4, dx);
		add_init(&m, "w", 4, dw, wv, sizeof wv, false);
		Onnx__NodeProto *n = add_node(&m, "ConvTranspose", 2, in_ct, 1, out_ct);
		node_int(&m, n, cases[c].name, 0);
		Onnx__AttributeProto *at = &m.attrs[m.nattr - 1];
		at->has_i = 0;
		at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
		at->n_ints = (size_t)cases[c].n;
		at->ints = (int64_t *)cases[c].v;
		add_output(&m, "y");
		Arena *a = arena_new();
		Diag d;
		Graph *g = import(a, &m, NULL, &d);
		if (cases[c].err) {
			assert_null(g);
			assert_non_null(strstr(d.msg, cases[c].err));
		} else if (!g) {
			fail_msg("%s: %s", cases[c].name, d.msg);
		}
		arena_free(a);
	}
}

/* One node of op `op` over nin inputs of element type dt and rank r (dims of 2),
 * the first a graph input, the others graph inputs or (konst) initializers of
 * small values, with nout outputs. Returns the import's Diag message, "" when it
 * imported. */
static const char *import_node(const char *op, int dt, int rank, int nin, bool konst,
			       int nout)
{
	static char *names[] = {"a", "b", "c", "d", "e"}, *outs[] = {"y", "z", "w"};
	static int64_t dims[IR_MAX_RANK] = {2, 2, 2, 2, 2, 2, 2, 2};
	static const uint8_t ones[16 * 8] = {1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
					     1, 0, 0, 0, 0, 0, 0, 0, 1};
	static char msg[sizeof ((Diag *)0)->msg];
	size_t es = dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ? 8
		    : dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ? 4 : 1;
	Model m;
	model_init(&m, 17);
	for (int i = 0; i < nin; i++) {
		if (konst && i > 0) {
			Onnx__TensorProto *tp = &m.inits[m.graph.n_initializer];
			add_init(&m, names[i], rank, dims, ones, ((size_t)1 << rank) * es, false);
			tp->data_type = dt;
		} else {
			add_input(&m, names[i], rank, dims);
			m.tts[m.nvi - 1].elem_type = dt;
		}
	}
	add_node(&m, op, nin, names, nout, outs);
	for (int i = 0; i < nout; i++)
		add_output(&m, outs[i]);
	Arena *a = arena_new();
	Diag d;
	Graph *g = import(a, &m, NULL, &d);
	snprintf(msg, sizeof msg, "%s", g ? "" : d.msg[0] ? d.msg : "(failed without a message)");
	arena_free(a);
	return msg;
}

/* Every mapped op over inputs of each dtype class (bool, int64, uint8, f32), of
 * ranks 0 to 4, 1 to 5 inputs as graph inputs or constants, 1 or 3 outputs: each
 * imports or fails with a message, never crashes (ASan and UBSan in make sanitize).
 * InstanceNormalization of a bool input dereferenced NULL (issue 25): a builder
 * that failed on the dtype passed NULL to reduce_axes, which read its rank. */
static void test_every_op_every_dtype(void **state)
{
	(void)state;
	static const int dts[] = {ONNX__TENSOR_PROTO__DATA_TYPE__BOOL,
				  ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
				  ONNX__TENSOR_PROTO__DATA_TYPE__UINT8,
				  ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT};
	static const int ranks[] = {0, 1, 3, 4};
	int tried = 0, imported = 0;
	for (int h = 0; h < onnx_handler_count(); h++)
		for (size_t t = 0; t < COUNTOF(dts); t++)
			for (size_t r = 0; r < COUNTOF(ranks); r++)
				for (int k = 0; k < 12; k++) {
					const char *msg = import_node(onnx_handler_name(h), dts[t],
								      ranks[r], 1 + 2 * (k % 3),
								      k / 3 % 2, 1 + 2 * (k / 6));
					if (strstr(msg, "without a message"))
						fail_msg("%s: %s", onnx_handler_name(h), msg);
					tried++;
					imported += !msg[0];
				}
	assert_true(imported > 0 && imported < tried);
	/* the float-only decompositions say so first */
	const char *bool_ops[] = {"InstanceNormalization", "MeanVarianceNormalization",
				  "BatchNormalization", "LayerNormalization", "Softmax", "Elu"};
	for (size_t i = 0; i < COUNTOF(bool_ops); i++) {
		char want[200];
		snprintf(want, sizeof want, "node 0 'y' (%s, opset 17): needs a float input, got "
			 "bool", bool_ops[i]);
		assert_string_equal(import_node(bool_ops[i], ONNX__TENSOR_PROTO__DATA_TYPE__BOOL,
						4, 5, false, 1), want);
	}
}

const struct CMUnitTest onnx_tests[] = {
	cmocka_unit_test(test_initializer_constant_and_run),
	cmocka_unit_test(test_shape_chain_folds),
	cmocka_unit_test(test_unmapped_op_error),
	cmocka_unit_test(test_symbolic_dim_and_input_shape),
	cmocka_unit_test(test_external_data),
	cmocka_unit_test(test_hostile_bytes),
	cmocka_unit_test(test_bad_initializers),
	cmocka_unit_test(test_import_bounds),
	cmocka_unit_test(test_scatter_indices),
	cmocka_unit_test(test_opset_and_domain),
	cmocka_unit_test(test_wide_unsigned),
	cmocka_unit_test(test_large_initializer),
	cmocka_unit_test(test_every_op_every_dtype),
	cmocka_unit_test(test_nesting_depth),
	cmocka_unit_test(test_conv_transpose_attr_lengths),
};
const size_t onnx_ntests = SUITE_COUNT(onnx_tests);
