/* fusec_run.c: `fusec-run`, the standalone launcher of compiled plans.
 *
 * It is what goes onto a GPU machine: linked only against libc, libm, libdl and
 * cJSON (no LLVM, no libyaml), it loads NAME.plan.json, checks that the host has
 * the memory, opens the driver and the device and loads NAME.ptx (of a plan for
 * several arches, the PTX of the highest one the device runs), then makes the
 * inputs (seeded random values, or NAME.npy files), runs every launch once
 * (replayed as a CUDA graph unless --no-graph or FUSEC_NO_GRAPH=1), and prints a
 * checksum line per tensor so two runs or two machines can be compared by eye;
 * --outputs writes the outputs as .npy for checking elsewhere (numpy). --bench
 * then times the plan, with direct launches and as a graph; --plan-only stops
 * after validating the plan and needs no GPU at all.
 *
 * Exit status: 0 success, 1 invalid plan or inputs, 2 usage, 3 driver or device
 * failure. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../runtime/rt.h"

enum { EXIT_OK = 0, EXIT_INPUT = 1, EXIT_USAGE = 2, EXIT_FAIL = 3 };
enum { PATH_SIZE = 1024 };   /* DIR/NAME.npy */

static const char usage_text[] =
	"usage: fusec-run DIR|PLAN.json [OPTIONS]\n"
	"\n"
	"Run a plan compiled by `fusec compile` on a CUDA GPU and print a checksum\n"
	"line for every input and output.\n"
	"\n"
	"options:\n"
	"  --inputs DIR       read input NAME from DIR/NAME.npy (default: random values)\n"
	"  --seed N           seed of the random inputs (default 0)\n"
	"  --save-inputs DIR  write the inputs used as DIR/NAME.npy\n"
	"  --outputs DIR      write every output as DIR/NAME.npy\n"
	"  --device N         CUDA device ordinal (default 0)\n"
	"  --bench            then time the plan: per-launch and total medians of runs\n"
	"                     issued back to back, bandwidth, and the latency of a run\n"
	"                     issued alone (the host waiting for it); the total and the\n"
	"                     latency again for runs replayed as a CUDA graph\n"
	"  --no-graph         launch kernel by kernel instead of replaying the plan as a\n"
	"                     CUDA graph (the same as FUSEC_NO_GRAPH=1)\n"
	"  --warmup N         untimed runs before timing (default 3)\n"
	"  --iters N          timed runs (default 50)\n"
	"  --input-shape NAME=DxD...  a plan for every size (fusec-plan/2): input\n"
	"                     NAME's shape, which gives the sizes of its named dims\n"
	"                     (without it, the shapes of the --inputs files do)\n"
	"  --plan-only        validate the plan and print its launches; no GPU needed\n"
	"  --version          print the version and the plan format it reads\n"
	"\n"
	"FUSEC_LIBCUDA names the driver library to load instead of libcuda.so.1;\n"
	"FUSEC_NO_GRAPH=1 turns CUDA graphs off.\n"
	"exit status: 0 success, 1 invalid plan or inputs, 2 usage error, 3 driver or\n"
	"device failure.\n";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "fusec-run: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'fusec-run --help'.\n");
	return EXIT_USAGE;
}

static int report(const Diag *d, int status)
{
	char line[1200];
	diag_format(d, line, sizeof line);
	fprintf(stderr, "%s%s\n", d->file[0] ? "" : "fusec-run: ", line);
	return status;
}

static int parse_count(const char *opt, const char *val, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(val, &end, 10);
	if (!val[0] || *end || errno || v < 0 || v > 1000000000) {
		fprintf(stderr, "fusec-run: %s expects a non-negative integer, got '%s'\n"
			"Try 'fusec-run --help'.\n", opt, val);
		return -1;
	}
	*out = v;
	return 0;
}

static int ensure_dir(const char *dir, Diag *d)
{
	if (mkdir(dir, 0777) == 0 || errno == EEXIST)
		return 0;
	diag_set(d, dir, 0, 0, "cannot create folder: %s", strerror(errno));
	return -1;
}

static void print_checksum(const char *kind, const char *name, const HostTensor *t)
{
	double sum = 0, abs_sum = 0;
	int64_t nan = 0;
	for (int64_t i = 0; i < t->n; i++) {
		double v = host_get(t, i);
		if (v != v) {
			nan++;
			continue;
		}
		sum += v;
		abs_sum += v < 0 ? -v : v;
	}
	uint64_t h = hash_bytes(HASH_SEED, t->data, (size_t)t->n * (size_t)ir_dtype_size(t->dtype));
	char shape[160];
	printf("%-6s %s %s sum=%.9g abs_sum=%.9g nan=%lld fnv=%016llx\n", kind, name,
	       host_shape_text(t->dtype, t->rank, t->dim, shape, sizeof shape), sum, abs_sum,
	       (long long)nan, (unsigned long long)h);
}

/* A shape of a plan for every size not bound yet: "f32[batch,seq,64]". */
static void print_sym_shape(const RtPlan *pl, const RtTensor *t)
{
	Buf b = {0};
	buf_printf(&b, "%s[", ir_dtype_name(t->dtype));
	for (int i = 0; i < t->rank; i++) {
		if (i)
			buf_putc(&b, ',');
		ir_dim_print(&b, &t->sdim[i], pl->dim_name);
	}
	buf_putc(&b, ']');
	fputs(b.data, stdout);
	buf_free(&b);
}

/* A plan for every size, not bound: its dims, tensors and each launch's sizes. */
static void print_unbound(const RtPlan *pl)
{
	printf("plan %s: arch %s, ptx %s\nfor every ", pl->path, pl->arch[0] ? pl->arch : "(none)",
	       pl->ptx_path);
	for (int k = 0; k < pl->ndim_names; k++)
		printf("%s%s in %lld..%lld", k ? ", " : "", pl->dim_name[k],
		       (long long)pl->dim_lo[k], (long long)pl->dim_hi[k]);
	printf(" (--input-shape binds them)\n");
	static const char *const roles[] = {"input", "intermediate", "output"};
	for (int i = 0; i < pl->ntensors; i++) {
		const RtTensor *t = &pl->tensors[i];
		printf("tensor %s ", t->name);
		print_sym_shape(pl, t);
		printf(" %s%s%s%s\n", roles[t->role], t->buffer ? " buffer" : "",
		       t->alias >= 0 ? " alias of " : "",
		       t->alias >= 0 ? pl->tensors[t->alias].name : "");
	}
	for (int i = 0; i < pl->nlaunches; i++) {
		const RtLaunch *l = &pl->launches[i];
		const RtKernel *k = &pl->kernels[l->kernel];
		Buf b = {0};
		for (int s = 1; s < l->ndims; s++) {
			buf_puts(&b, s > 1 ? "," : "");
			ir_dim_print(&b, &l->sdims[s], pl->dim_name);
		}
		printf("launch %d step %d: %s rule %s, sizes [%s]\n", i, l->step, k->entry,
		       cg_rule_name(k->launch.coop ? k->launch.rule : CG_RULE_NONE),
		       b.data ? b.data : "");
		buf_free(&b);
	}
}

static void print_plan(const RtPlan *pl)
{
	char shape[160], num[48];
	if (!pl->bound) {
		print_unbound(pl);
		return;
	}
	printf("plan %s: arch %s, ptx %s\n", pl->path, pl->arch[0] ? pl->arch : "(none)",
	       pl->ptx_path);
	if (pl->ndim_names) {
		Buf b = {0};
		rt_plan_dims_text(pl, &b);
		printf("sizes: %s\n", b.data);
		buf_free(&b);
	}
	/* a plan of several arches or ranges of sizes: the others, which a device or the
	 * sizes may run instead (the launches below are the first arch's, of the
	 * narrowest range that holds the sizes) */
	for (int v = 1; v < pl->nvariants; v++) {
		const RtVariant *x = &pl->variants[v];
		printf("variant: arch %s, ", x->arch);
		for (int k = 0; x->lo && k < pl->ndim_names; k++)
			printf("%s %s in %lld..%lld%s", k ? "," : "sizes", pl->dim_name[k],
			       (long long)x->lo[k], (long long)x->hi[k],
			       k + 1 == pl->ndim_names ? ", " : "");
		printf("ptx %s, %d kernels\n", x->ptx_path, x->nkernels);
	}
	int range = rt_plan_pick_range(pl, 0);
	if (range > 0) {
		printf("runs: the variant of ptx %s\n", pl->variants[range].ptx_path);
		rt_plan_use((RtPlan *)pl, range);
	}
	static const char *const roles[] = {"input", "intermediate", "output"};
	for (int i = 0; i < pl->ntensors; i++) {
		const RtTensor *t = &pl->tensors[i];
		printf("tensor %s %s %s%s%s%s\n", t->name,
		       host_shape_text(t->dtype, t->rank, t->dim, shape, sizeof shape),
		       roles[t->role], t->buffer ? " buffer" : "",
		       t->alias >= 0 ? " alias of " : "",
		       t->alias >= 0 ? pl->tensors[t->alias].name : "");
	}
	for (int i = 0; i < pl->nlaunches; i++) {
		const RtLaunch *l = &pl->launches[i];
		const RtStep *st = &pl->steps[l->step];
		printf("launch %d step %d (segment %d, plan %d, %s): %s grid [%u,%u,%u] block "
		       "[%u,%u,%u] shared %u\n  args:", i, l->step, st->segment, st->plan,
		       st->mode[0] ? st->mode : "-", pl->kernels[l->kernel].entry,
		       l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
		       l->shared_bytes);
		for (int k = 0; k < l->nargs; k++) {
			const RtArg *a = &l->args[k];
			switch (a->type) {
			case RT_P_PTR:
				if (a->tensor == pl->ntensors)
					printf(" scratch %lld", (long long)a->i);
				else
					printf(" %s", pl->tensors[a->tensor].name);
				break;
			case RT_P_I64:
			case RT_P_I32:
				printf(" %s %lld", rt_param_name(a->type), (long long)a->i);
				break;
			case RT_P_TMAP:
				printf(" tmap %s [", pl->tensors[a->tensor].name);
				for (int d = 0; d < a->tm->rank; d++)
					printf("%s%llu", d ? "," : "", (unsigned long long)a->tm->dim[d]);
				printf("] box [");
				for (int d = 0; d < a->tm->rank; d++)
					printf("%s%u", d ? "," : "", a->tm->box[d]);
				printf("]");
				break;
			default:
				fmt_double(num, sizeof num, a->f);
				printf(" %s %s", rt_param_name(a->type), num);
			}
			printf("%s", k + 1 < l->nargs ? "," : "");
		}
		printf("\n");
	}
	printf("bytes that must move: %llu (inputs %llu + outputs %llu)\n",
	       (unsigned long long)(rt_plan_bytes_in(pl) + rt_plan_bytes_out(pl)),
	       (unsigned long long)rt_plan_bytes_in(pl), (unsigned long long)rt_plan_bytes_out(pl));
}

/* How the run launched: "launches: 2, replayed as a CUDA graph", or direct and why. */
static void print_launches(const RtPlan *pl, const RtGraphInfo *gi, bool no_graph)
{
	printf("launches: %d, ", pl->nlaunches);
	if (gi->mode == RT_GRAPH_ON)
		printf("replayed as a CUDA graph\n");
	else if (gi->mode == RT_GRAPH_OFF)
		printf("direct (graph %s)\n", no_graph ? "turned off by --no-graph" : gi->why);
	else
		printf("direct (the CUDA graph capture failed: %s)\n", gi->why);
}

/* Input `t` of the plan, from DIR/NAME.npy or random. */
static int make_input(const RtPlan *pl, int t, const char *dir, uint64_t seed, HostTensor *out,
		      Diag *d)
{
	const RtTensor *rt = &pl->tensors[t];
	if (!dir) {
		if (host_alloc(out, rt->dtype, rt->rank, rt->dim, d) < 0)
			return EXIT_INPUT;
		HostRng r;
		double lo, hi;
		host_rng_init(&r, seed, host_input_stream(rt->name));   /* as fusec run */
		host_default_range(rt->dtype, &lo, &hi);
		host_fill_random(out, &r, lo, hi);
		return EXIT_OK;
	}
	char path[PATH_SIZE];
	npy_path(path, sizeof path, dir, rt->name);
	HostTensor f;
	if (npy_read_file(path, &f, d) < 0)
		return EXIT_INPUT;
	bool same = f.rank == rt->rank;
	for (int i = 0; same && i < rt->rank; i++)
		same = f.dim[i] == rt->dim[i];
	bool widened = rt->dtype == DT_BF16 && f.dtype == DT_F32;
	if (!same || (f.dtype != rt->dtype && !widened)) {
		char want[160], got[160];
		diag_set(d, path, 0, 0, "holds %s, but input '%s' is %s",
			 host_shape_text(f.dtype, f.rank, f.dim, got, sizeof got), rt->name,
			 host_shape_text(rt->dtype, rt->rank, rt->dim, want, sizeof want));
		host_free(&f);
		return EXIT_INPUT;
	}
	if (!widened) {
		*out = f;
		return EXIT_OK;
	}
	if (host_alloc(out, rt->dtype, rt->rank, rt->dim, d) < 0) {
		host_free(&f);
		return EXIT_INPUT;
	}
	for (int64_t i = 0; i < f.n; i++)
		host_set(out, i, host_get(&f, i));
	host_free(&f);
	return EXIT_OK;
}

enum { MAX_SHAPES = 64 };

typedef struct {
	const char *plan, *inputs, *save_inputs, *outputs;
	long seed, device;
	bool bench, plan_only, no_graph;
	RtBenchOptions bo;
	/* --input-shape NAME=DxD...: the sizes of a plan for every size (ir_parse_shape;
	 * the names in `names`) */
	const char *shape_name[MAX_SHAPES];
	int shape_rank[MAX_SHAPES];
	int64_t shape_dim[MAX_SHAPES][IR_MAX_RANK];
	int nshapes;
	Arena *names;
} Options;

/* NAME=DxDxD into o's shapes: 0, or -1 with the reason in msg. */
static int parse_shape(Options *o, const char *arg, char *msg, size_t size)
{
	IrInputShape s;
	if (o->nshapes == MAX_SHAPES) {
		snprintf(msg, size, "more than %d of them", MAX_SHAPES);
		return -1;
	}
	if (!o->names)
		o->names = arena_new();
	if (ir_parse_shape(o->names, arg, &s, msg, size))
		return -1;
	o->shape_name[o->nshapes] = s.name;
	o->shape_rank[o->nshapes] = s.rank;
	memcpy(o->shape_dim[o->nshapes++], s.dim, sizeof s.dim);
	return 0;
}

static int parse_args(int argc, char **argv, Options *o)
{
	enum { O_BENCH = 256, O_PLAN_ONLY, O_INPUTS, O_SAVE_INPUTS, O_OUTPUTS, O_SEED, O_DEVICE,
	       O_WARMUP, O_ITERS, O_VERSION, O_NO_GRAPH, O_SHAPE };
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, O_VERSION},
		{"bench", no_argument, NULL, O_BENCH},
		{"plan-only", no_argument, NULL, O_PLAN_ONLY},
		{"no-graph", no_argument, NULL, O_NO_GRAPH},
		{"inputs", required_argument, NULL, O_INPUTS},
		{"save-inputs", required_argument, NULL, O_SAVE_INPUTS},
		{"outputs", required_argument, NULL, O_OUTPUTS},
		{"seed", required_argument, NULL, O_SEED},
		{"device", required_argument, NULL, O_DEVICE},
		{"warmup", required_argument, NULL, O_WARMUP},
		{"iters", required_argument, NULL, O_ITERS},
		{"input-shape", required_argument, NULL, O_SHAPE},
		{0, 0, 0, 0},
	};
	memset(o, 0, sizeof *o);
	rt_bench_defaults(&o->bo);
	opterr = 0;   /* the usage errors are worded here */
	int c;
	long v;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *opt = argv[optind - 1];
		switch (c) {
		case 'h':
			fputs(usage_text, stdout);
			exit(finish_stdout("fusec-run", EXIT_OK));
		case O_VERSION:
			fputs("fusec-run " FUSEC_VERSION "\nplan format fusec-plan/1, fusec-plan/2\n",
			      stdout);
			exit(finish_stdout("fusec-run", EXIT_OK));
		case O_BENCH: o->bench = true; break;
		case O_PLAN_ONLY: o->plan_only = true; break;
		case O_NO_GRAPH: o->no_graph = true; break;
		case O_INPUTS: o->inputs = optarg; break;
		case O_SHAPE: {
			char msg[200];
			if (parse_shape(o, optarg, msg, sizeof msg) < 0)
				return usage_error("--input-shape: %s", msg);
			break;
		}
		case O_SAVE_INPUTS: o->save_inputs = optarg; break;
		case O_OUTPUTS: o->outputs = optarg; break;
		case O_SEED:
			if (parse_count("--seed", optarg, &o->seed) < 0)
				return EXIT_USAGE;
			break;
		case O_DEVICE:
			if (parse_count("--device", optarg, &o->device) < 0)
				return EXIT_USAGE;
			break;
		case O_WARMUP:
			if (parse_count("--warmup", optarg, &v) < 0)
				return EXIT_USAGE;
			o->bo.warmup = (int)v;
			break;
		case O_ITERS:
			if (parse_count("--iters", optarg, &v) < 0)
				return EXIT_USAGE;
			if (v == 0)
				return usage_error("%s must be at least 1", "--iters");
			o->bo.iters = (int)v;
			break;
		case ':':
			return usage_error("%s needs a value", opt);
		default:
			return usage_error("unknown option '%s'", opt);
		}
	}
	if (argc - optind > 1)
		return usage_error("one plan at a time; '%s' is a second one", argv[optind + 1]);
	if (argc - optind < 1)
		return usage_error("%s", "no plan given");
	o->plan = argv[optind];
	return EXIT_OK;
}

/* The length of dir without trailing "/" and "/." ("out/./" and "out" alike). */
static size_t dir_len(const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && (dir[n - 1] == '/' || (n > 2 && dir[n - 1] == '.' && dir[n - 2] == '/')))
		n -= dir[n - 1] == '/' ? 1 : 2;
	return n;
}

/* One folder: the same inode, or (not made yet) the same name. */
static bool same_dir(const char *a, const char *b)
{
	struct stat x, y;
	if (!stat(a, &x) && !stat(b, &y))
		return x.st_dev == y.st_dev && x.st_ino == y.st_ino;
	return dir_len(a) == dir_len(b) && !strncmp(a, b, dir_len(a));
}

/* Distinct files for the tensors each folder holds: --inputs and --save-inputs
 * (the inputs), --outputs (the outputs; the inputs too when --save-inputs names
 * the same folder). */
static int check_names(const Options *o, const RtPlan *pl, Diag *d)
{
	const char **names = xcalloc((size_t)pl->ntensors + 1, sizeof *names);
	const char *dirs[3] = {o->inputs, o->save_inputs, o->outputs};
	static const char *const opts[3] = {"--inputs", "--save-inputs", "--outputs"};
	bool both = o->save_inputs && o->outputs && same_dir(o->save_inputs, o->outputs);
	int bad = 0;
	for (int k = 0; k < 3 && !bad; k++) {
		int n = 0;
		for (int t = 0; dirs[k] && t < pl->ntensors; t++) {
			const RtTensor *rt = &pl->tensors[t];
			bool in = rt->role == ROLE_INPUT && !rt->constant;
			if (k < 2 ? in : rt->output || (both && in))
				names[n++] = rt->name;
		}
		bad = dirs[k] && npy_check_names(dirs[k], names, NULL, n, PATH_SIZE, opts[k],
						 k ? "written to" : "read from", d);
	}
	free(names);
	return bad ? EXIT_INPUT : EXIT_OK;
}

static int run(const Options *o, const RtPlan *pl, HostTensor *host, Diag *d)
{
	int rc = check_names(o, pl, d);
	if (rc != EXIT_OK)
		return rc;
	if (rt_plan_host_check(pl, d) != RT_OK)
		return EXIT_INPUT;
	if (o->save_inputs && ensure_dir(o->save_inputs, d) < 0)
		return EXIT_INPUT;
	/* the driver and the device before the inputs: a machine without a GPU fails
	 * at once, not after making gigabytes of inputs */
	RtSession *s;
	RtStatus st = rt_session_open(&s, pl, (int)o->device, d);
	if (st != RT_OK)
		return (int)st;
	if (o->no_graph)
		rt_session_set_graph(s, false);
	for (int t = 0; st == RT_OK && t < pl->ntensors; t++) {
		if (pl->tensors[t].role != ROLE_INPUT || pl->tensors[t].constant)
			continue;
		rc = make_input(pl, t, o->inputs, (uint64_t)o->seed, &host[t], d);
		if (rc != EXIT_OK) {
			rt_session_close(s);
			return rc;
		}
		st = rt_session_upload(s, t, &host[t], d);
	}
	if (st == RT_OK)
		st = rt_session_run(s, d);
	RtGraphInfo gi;
	rt_session_graph_info(s, &gi);   /* the run's, before --bench captures more */
	for (int t = 0; st == RT_OK && t < pl->ntensors; t++)
		if (pl->tensors[t].role == ROLE_OUTPUT ||
		    (pl->tensors[t].constant && pl->tensors[t].output))
			st = rt_session_download(s, t, &host[t], d);   /* inputs stay in host[] */
	RtBenchResult br = {0};
	if (st == RT_OK && o->bench)
		st = rt_bench(s, &o->bo, &br, d);
	if (st == RT_OK && o->bench && o->no_graph)
		snprintf(br.graph_why, sizeof br.graph_why, "turned off by --no-graph");
	if (st == RT_OK) {
		const RtDeviceInfo *dv = rt_session_device(s);
		printf("device %d: %s (sm_%d%d)\n", dv->ordinal, dv->name, dv->cc_major, dv->cc_minor);
		Buf arch = {0};   /* which of the plan's arches runs, when it has several */
		rt_session_arch_line(s, &arch);
		fputs(arch.data ? arch.data : "", stdout);
		buf_free(&arch);
		print_launches(pl, &gi, o->no_graph);
		for (int t = 0; t < pl->ntensors; t++)
			if (pl->tensors[t].role == ROLE_INPUT && !pl->tensors[t].constant)
				print_checksum("input", pl->tensors[t].name, &host[t]);
		for (int t = 0; t < pl->ntensors; t++)
			if (pl->tensors[t].output)
				print_checksum("output", pl->tensors[t].name, &host[t]);
		if (o->bench) {
			Buf b = {0};
			rt_bench_report(&b, s, &br);
			fputs(b.data ? b.data : "", stdout);
			buf_free(&b);
		}
	}
	rt_bench_result_free(&br);
	rt_session_close(s);
	if (st != RT_OK)
		return (int)st;

	char path[PATH_SIZE];
	for (int t = 0; t < pl->ntensors; t++) {
		const RtTensor *rt = &pl->tensors[t];
		const char *dirs[2] = {rt->role == ROLE_INPUT && !rt->constant ? o->save_inputs : NULL,
				       rt->output ? o->outputs : NULL};
		for (int k = 0; k < 2; k++) {
			if (!dirs[k])
				continue;
			if (ensure_dir(dirs[k], d) < 0)
				return EXIT_INPUT;
			npy_path(path, sizeof path, dirs[k], rt->name);
			if (npy_write_file(path, &host[t], d) < 0)
				return EXIT_INPUT;
		}
	}
	return EXIT_OK;
}

/* A plan for every size: its sizes from --input-shape, else from the headers of
 * the --inputs files of the inputs whose shapes name a dim. */
static int bind_sizes(const Options *o, RtPlan *pl, Diag *d)
{
	if (o->nshapes)
		return rt_plan_bind_shapes(pl, o->shape_name, o->shape_rank, o->shape_dim,
					   o->nshapes, d) == RT_OK ? 0 : -1;
	return rt_plan_bind_npy(pl, o->inputs, d) == RT_OK ? 0 : -1;
}

static int run_options(Options *op)
{
	Options o = *op;
	int rc;
	Diag d;
	RtPlan *pl = rt_plan_load(o.plan, &d);
	if (!pl)
		return report(&d, EXIT_INPUT);
	if (pl->ndim_names && (o.nshapes || o.inputs || !o.plan_only) && bind_sizes(&o, pl, &d) < 0) {
		rt_plan_free(pl);
		return report(&d, EXIT_INPUT);
	}
	if (o.plan_only) {
		print_plan(pl);
		rt_plan_free(pl);
		return EXIT_OK;
	}
	HostTensor *host = xcalloc((size_t)pl->ntensors + 1, sizeof *host);
	rc = run(&o, pl, host, &d);
	for (int t = 0; t < pl->ntensors; t++)
		host_free(&host[t]);
	free(host);
	rt_plan_free(pl);
	if (rc != EXIT_OK)
		return report(&d, rc);
	return EXIT_OK;
}

static int run_main(int argc, char **argv)
{
	Options o;
	int rc = parse_args(argc, argv, &o);
	if (rc == EXIT_OK)
		rc = run_options(&o);
	arena_free(o.names);   /* the --input-shape names */
	return rc;
}

int main(int argc, char **argv)
{
	/* A write to stdout that failed (a full disk, a closed pipe) fails the run. */
	return finish_stdout("fusec-run", run_main(argc, argv));
}
