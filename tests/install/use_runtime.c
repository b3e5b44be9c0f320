/* use_runtime.c: a program outside the tree that links the installed runtime through
 * pkg-config (`pkg-config --cflags --libs fusecrt`) and runs a compiled plan:
 * every input filled with 0.001 * i, one run, the sum of every output printed.
 * tests/cli/t_install.sh builds it against a temporary prefix. */
#include <stdio.h>

#include <fusec/runtime/fusecrt.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: use_runtime PLAN\n");
		return 2;
	}
	Diag d;
	RtPlan *p = rt_plan_load(argv[1], &d);
	if (!p) {
		fprintf(stderr, "%s\n", d.msg);
		return 1;
	}
	RtNamed in[64] = {{0}}, out[64] = {{0}};
	int nin = 0, nout = 0;
	for (int i = 0; i < p->ntensors && nin < 64 && nout < 64; i++) {
		const RtTensor *t = &p->tensors[i];
		if (t->role == ROLE_INPUT) {
			in[nin].name = t->name;
			if (host_alloc(&in[nin].t, t->dtype, t->rank, t->dim, &d))
				return 1;
			for (int64_t k = 0; k < t->n; k++)
				host_set(&in[nin].t, k, 0.001 * (double)(k % 1000));
			nin++;
		}
		if (t->output)
			out[nout++].name = t->name;
	}
	int rc = 0;
	if (rt_cuda_run(argv[1], in, nin, out, nout, &d) != RT_OK) {
		fprintf(stderr, "run: %s\n", d.msg);
		rc = 3;
	}
	for (int i = 0; i < nout; i++) {
		if (!rc) {
			double sum = 0;
			for (int64_t k = 0; k < out[i].t.n; k++)
				sum += host_get(&out[i].t, k);
			printf("output %s sum=%.6g\n", out[i].name, sum);
		}
		host_free(&out[i].t);
	}
	for (int i = 0; i < nin; i++)
		host_free(&in[i].t);
	rt_plan_free(p);
	return rc;
}
