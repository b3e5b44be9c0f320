/* bench.c: `fusec bench GRAPH|DIR --backend cuda` times a compiled plan on GPU 0:
 * warm-up runs, then CUDA-event timing of every launch, the median of --iters
 * runs, buffer sets rotated when one set fits in L2 (runtime/rt.h, rt_bench).
 * A GRAPH is compiled first into a temporary folder; a DIR is used as it is. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "run.h"

static const char bench_usage[] =
	"usage: fusec bench GRAPH|DIR [--backend cuda] [--iters N] [--warmup N]\n"
	"                   [--inputs DIR] [--seed N] [--no-3xtf32]\n"
	"\n"
	"Time GRAPH (compiled first) or the plan `fusec compile` wrote into DIR on\n"
	"GPU 0 and print per-launch and total medians and the achieved bandwidth\n"
	"(bytes that must move / median time).\n"
	"\n"
	"  --backend cuda   the only timed backend (default)\n"
	"  --iters N        timed runs (default 50)\n"
	"  --warmup N       untimed runs first (default 3)\n"
	"  --inputs DIR     read input NAME from DIR/NAME.npy (default: random values);\n"
	"                   a graph's named dims take the files' shapes\n"
	"  --seed N         seed of the random inputs (default 0)\n"
	"  --no-3xtf32      GRAPH's f32 matmuls on f32 FMA, as compile's\n"
	"  --precision bf16|f16, --keep-f32 LIST  GRAPH converted before it is compiled\n"
	"  --layout nhwc          GRAPH's convolutions and pools channels last\n"
	"                   (docs/precision.md)\n"
	"\n"
	"exit status: 0 success, 1 invalid graph, plan or inputs, 2 usage error,\n"
	"3 no GPU or a driver failure.\n";

/* Bench the plan at path with the given inputs. */
static int bench_plan(const char *path, const RtNamed *in, int nin, const RtBenchOptions *o)
{
	Buf report = {0};
	Diag d;
	RtStatus rs = rt_cuda_bench(path, in, nin, o, &report, &d);
	if (rs == RT_OK)
		fwrite(report.data, 1, report.len, stdout);
	else
		cmd_print_diag(&d);
	buf_free(&report);
	return rs == RT_OK ? EXIT_OK : rs == RT_ERR_INPUT ? EXIT_INPUT : EXIT_FAIL;
}

static int bench_graph(const char *path, const char *inputs, uint64_t seed, const RtBenchOptions *o)
{
	Arena *a = arena_new();
	Graph *g = run_load_graph(a, path, inputs);
	if (!g) {
		arena_free(a);
		return EXIT_INPUT;
	}
	HostTensor *in = xcalloc((size_t)g->ninputs + 1, sizeof *in);
	RtNamed *named = xcalloc((size_t)g->ninputs + 1, sizeof *named);
	RunTemp tmp = {0};
	Diag d;
	int status = run_precheck(g, &run_cuda_backend, inputs, NULL, false, false);
	if (status != EXIT_OK) {
		/* printed */
	} else if ((inputs && run_load_inputs(g, inputs, in)) || run_random_inputs(g, seed, in)) {
		status = EXIT_INPUT;
	} else if (run_cuda_compile(g, false, cmd_x3(), false, &tmp, &d)) {
		cmd_print_diag(&d);
		status = EXIT_FAIL;
	} else {
		for (int i = 0; i < g->ninputs; i++) {
			named[i].name = g->tensors[g->inputs[i]].name;
			named[i].t = in[i];
		}
		status = bench_plan(tmp.plan, named, g->ninputs, o);
	}
	run_cuda_cleanup(&tmp);
	for (int i = 0; i < g->ninputs; i++)
		host_free(&in[i]);
	free(in);
	free(named);
	arena_free(a);
	return status;
}

int cmd_bench(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"backend", required_argument, NULL, 'b'},
		{"iters", required_argument, NULL, 'n'},
		{"warmup", required_argument, NULL, 'w'},
		{"inputs", required_argument, NULL, 'i'},
		{"seed", required_argument, NULL, 's'},
		{"no-3xtf32", no_argument, NULL, 'Y'},
		{0, 0, 0, 0},
	};
	RtBenchOptions o;
	rt_bench_defaults(&o);
	const char *inputs = NULL;
	long v, seed = 0;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(bench_usage, stdout);
			return EXIT_OK;
		case 'b':
			if (strcmp(optarg, "cuda")) {
				cmd_usage_error("bench", "backend '%s' cannot be timed (only cuda)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'n':
		case 'w':
			if ((v = cmd_parse_count("bench", c == 'n' ? "--iters" : "--warmup", optarg)) < 0)
				return EXIT_USAGE;
			if (c == 'n' && v < 1) {
				cmd_usage_error("bench", "option '--iters' needs at least 1");
				return EXIT_USAGE;
			}
			*(c == 'n' ? &o.iters : &o.warmup) = (int)v;
			break;
		case 'i':
			inputs = optarg;
			break;
		case 's':
			if ((seed = cmd_parse_count("bench", "--seed", optarg)) < 0)
				return EXIT_USAGE;
			break;
		case 'Y':
			break;   /* cmd_x3 */
		default:
			return cmd_bad_option("bench", longopts, "h", argv, optind);
		}
	}
	if (argc - optind != 1) {
		cmd_usage_error("bench", "expected one GRAPH or DIR argument");
		return EXIT_USAGE;
	}
	const char *path = argv[optind];
	if (!run_is_plan(path))
		return bench_graph(path, inputs, (uint64_t)seed, &o);
	if (cmd_refuse_input_shapes(path))
		return EXIT_INPUT;
	RunPlan rp;
	Diag d;
	RtStatus st = run_plan_open(path, inputs, NULL, (uint64_t)seed, &rp, &d);
	if (st != RT_OK) {
		cmd_print_diag(&d);
		run_plan_close(&rp);
		return (int)st;
	}
	int status = bench_plan(path, rp.in, rp.nin, &o);
	run_plan_close(&rp);
	return status;
}
