/* bench_search.c: times the search and the plan writer on one graph
 * (docs/benchmarks.md, "Search and plan throughput").
 *
 * Reads and validates GRAPH, runs pass_search on it, lowers the schedule into
 * kernels and bound launches (cg_lower, which builds each distinct kernel's LLVM IR
 * once), renders the plan JSON with cg_plan_json, and times the phases apart.
 * "plan" is lowering plus rendering: what a compile does between the search and the
 * LLVM optimizer; --ptx adds the optimizer and PTX emission as a phase of its own.
 * Times are the process's CPU time, so other load on a shared machine does not
 * count (the work is single-threaded). The throughput counts the graph's ops
 * without its syncs. Peak RSS is getrusage's ru_maxrss at the start (the loaded
 * libraries, LLVM's mostly) and after each phase (a high-water mark: it only
 * grows); the arena figures are the bytes the graph's and the schedule's arenas
 * handed out.
 *
 * Usage: bench_search GRAPH [--record] [--ptx] [--header] [--dump PREFIX]
 *                     [--max-blocks N] [--pretty]
 *   --record      keep the decision record, as `fusec compile` does (default: not)
 *   --ptx         also run cg_module_finish and cg_module_emit_ptx (column ptx_s)
 *   --header      print the column names first
 *   --dump        write PREFIX.plan.json and, with --record, the full log PREFIX.log
 *                 (to check that an optimization changes no output)
 *   --max-blocks  the search's block cap (default 5)
 *   --pretty      render the plan indented (--plan-style pretty) instead of compact
 * Prints one line of whitespace-separated columns (see `header` below). Exit status
 * 0, 1 when the graph does not validate or code generation fails, 2 on a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "../../codegen/codegen.h"
#include "../../codegen/plan.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double peak_rss_mb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0;
}

static const char header[] =
	"graph ops segments read_s search_s plan_s ops_per_s_search_plan ops_per_s_e2e "
	"rss_read_mb rss_search_mb rss_peak_mb graph_arena_mb schedule_arena_mb "
	"explorations hits plans kernels steps plan_bytes lower_s json_s ptx_s cg_kernels "
	"rss_start_mb";

static void usage(void)
{
	fprintf(stderr, "usage: bench_search GRAPH [--record] [--ptx] [--header] [--dump PREFIX] "
		"[--max-blocks N] [--pretty]\n");
	exit(2);
}

static int fail(const Diag *d)
{
	char msg[1200];
	diag_format(d, msg, sizeof msg);
	fprintf(stderr, "%s\n", msg);
	return 1;
}

static int write_dump(const char *prefix, const Schedule *s, const char *plan, bool log)
{
	char path[1024];
	snprintf(path, sizeof path, "%s.plan.json", prefix);
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return -1;
	}
	fputs(plan, f);
	fclose(f);
	if (!log)
		return 0;
	snprintf(path, sizeof path, "%s.log", prefix);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return -1;
	}
	pass_log_write(s, LOG_FULL, f);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *dump = NULL;
	int max_blocks = 5;
	bool record = false, ptx = false, want_header = false, pretty = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--record"))
			record = true;
		else if (!strcmp(argv[i], "--ptx"))
			ptx = true;
		else if (!strcmp(argv[i], "--pretty"))
			pretty = true;
		else if (!strcmp(argv[i], "--header"))
			want_header = true;
		else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
			dump = argv[++i];
		else if (!strcmp(argv[i], "--max-blocks") && i + 1 < argc)
			max_blocks = atoi(argv[++i]);
		else if (!path && argv[i][0] != '-')
			path = argv[i];
		else
			usage();
	}
	if (!path)
		usage();

	double rss_start = peak_rss_mb();
	double t0 = now();
	Arena *a = arena_new();
	Diag d;
	Graph *g = ir_read_file(a, path, FMT_AUTO, &d);
	if (!g)
		return fail(&d);
	double t1 = now();
	double rss_read = peak_rss_mb();

	SearchOptions so;
	pass_default_options(&so);
	so.no_record = !record;
	so.max_blocks = max_blocks;
	Schedule *s = pass_search(g, &so);
	double t2 = now();
	double rss_search = peak_rss_mb();

	Arena *ca = arena_new();
	CgOptions co = {.target = CG_TARGET_NVPTX, .arch = "sm_90", .name = g->name};
	CgProgram prog;
	CgModule *m = cg_module_new(&co, ca, &d);
	if (!m || cg_lower(m, s, ca, &prog, &d))
		return fail(&d);
	double t3 = now();
	PlanFileInfo info = {.target = {{"sm_90", "bench.ptx", NULL}}, .ntargets = 1,
			     .pretty = pretty};
	char *text = cg_plan_json(s, &prog, &info);
	size_t plan_bytes = strlen(text);
	double t4 = now();
	double rss_peak = peak_rss_mb();
	double t5 = t4;
	if (ptx) {
		Buf out = {0};
		if (cg_module_finish(m, &d) || cg_module_emit_ptx(m, &out, &d))
			return fail(&d);
		buf_free(&out);
		t5 = now();
	}

	int nops = 0;
	for (int i = 0; i < g->nops; i++)
		nops += g->ops[i].kind != OP_SYNC;
	double sp = t4 - t1;
	if (want_header)
		printf("%s\n", header);
	printf("%s %d %d %.4f %.4f %.4f %.0f %.0f %.1f %.1f %.1f %.1f %.1f %d %d %d %d %d %zu "
	       "%.4f %.4f %.4f %d %.1f\n",
	       g->name, nops, g->nsegs, t1 - t0, t2 - t1, t4 - t2, nops / sp, nops / (t4 - t0),
	       rss_read, rss_search, rss_peak, (double)a->total / 1048576.0,
	       (double)s->arena->total / 1048576.0, s->nexplorations, s->nhits, s->nplans,
	       s->nkernels, s->nsteps, plan_bytes, t3 - t2, t4 - t3, t5 - t4, prog.nkernels, rss_start);
	if (dump && write_dump(dump, s, text, record))
		return 1;
	free(text);
	cg_module_free(m);
	arena_free(ca);
	pass_free_schedule(s);
	arena_free(a);
	return 0;
}
