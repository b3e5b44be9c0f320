/* use_runtime_dims.c: a plan for every size through <fusecrt.h> alone (tests/cli/
 * t_install.sh): its named dims and ranges, then, for each NAME=DxD... argument in
 * turn, a binding from that input shape and the outputs' shapes at those sizes, or
 * the error. No device is opened.
 * usage: use_runtime_dims PLAN NAME=DxD... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fusecrt.h>

/* "WHAT: NAME DTYPE [D,D,...] N bytes" for each output: 0, or 1 on an error. */
static int print_outputs(const fusecrt_plan *p, const char *what)
{
	for (int i = 0; i < fusecrt_plan_noutputs(p); i++) {
		const char *out = fusecrt_plan_output(p, i), *dt;
		int r;
		int64_t d[8];
		size_t bytes;
		fusecrt_error e;
		if (fusecrt_plan_tensor(p, out, &dt, &r, d, &bytes, &e))
			return 1;
		printf("%s: %s %s [", what, out, dt);
		for (int j = 0; j < r; j++)
			printf("%s%lld", j ? "," : "", (long long)d[j]);
		printf("] %zu bytes\n", bytes);
	}
	return 0;
}

int main(int argc, char **argv)
{
	fusecrt_error e;
	if (argc < 2)
		return 2;
	fusecrt_plan *p = fusecrt_plan_load(argv[1], &e);
	if (!p) {
		fprintf(stderr, "%s\n", e.message);
		return 1;
	}
	for (int i = 0; i < fusecrt_plan_ndims(p); i++) {
		int64_t lo, hi;
		const char *name = fusecrt_plan_dim(p, i, &lo, &hi);
		printf("dim %s %lld..%lld\n", name, (long long)lo, (long long)hi);
	}
	if (fusecrt_plan_ndims(p) && print_outputs(p, "unbound"))
		return 1;
	int rc = 0;
	for (int a = 2; a < argc; a++) {
		char name[64];
		int rank = 0;
		int64_t dims[8];
		const char *eq = strchr(argv[a], '=');
		if (!eq || eq - argv[a] >= (int)sizeof name)
			return 2;
		memcpy(name, argv[a], (size_t)(eq - argv[a]));
		name[eq - argv[a]] = 0;
		for (const char *q = eq + 1; *q && rank < 8; q += *q == 'x')
			dims[rank++] = strtoll(q, (char **)&q, 10);
		const char *names[1] = {name};
		if (fusecrt_plan_bind(p, 1, names, &rank, dims, &e)) {
			printf("bind %s: error %d: %s\n", argv[a], e.status, e.message);
			rc = 1;
			continue;
		}
		char what[128];
		snprintf(what, sizeof what, "bind %s", argv[a]);
		if (print_outputs(p, what))
			return 1;
	}
	fusecrt_plan_free(p);
	return rc;
}
