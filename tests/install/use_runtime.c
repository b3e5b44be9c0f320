/* use_runtime.c: a program outside the tree that links the installed runtime through
 * pkg-config (`pkg-config --cflags --libs fusecrt`) and runs a compiled plan through
 * <fusecrt.h> alone: every input filled with 0.001 * (i % 1000) (f32 inputs; others
 * zero), one run, the arch it ran and the sum of every f32 output printed. tests/cli/t_install.sh builds
 * it against a temporary prefix. Exit status: the failing call's status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fusecrt.h>

static int die(const fusecrt_error *e)
{
	fprintf(stderr, "%s%s%s\n", e->file, e->file[0] ? ": " : "", e->message);
	return e->status;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: use_runtime PLAN\n");
		return 2;
	}
	fusecrt_error e;
	fusecrt_plan *p = fusecrt_plan_load(argv[1], &e);
	if (!p)
		return die(&e);
	fusecrt_session *s = fusecrt_session_open(p, 0, &e);
	if (!s) {
		fusecrt_plan_free(p);
		return die(&e);
	}
	printf("arch %s\n", fusecrt_session_arch(s));   /* the plan's arch for this device */
	int rc = 0;
	for (int i = 0; i < fusecrt_plan_ninputs(p) && !rc; i++) {
		const char *name = fusecrt_plan_input(p, i), *dt;
		size_t bytes;
		if (fusecrt_plan_tensor(p, name, &dt, NULL, NULL, &bytes, &e))
			rc = die(&e);
		unsigned char *buf = calloc(bytes ? bytes : 1, 1);
		if (!strcmp(dt, "f32"))
			for (size_t k = 0; k < bytes / 4; k++)
				((float *)buf)[k] = 0.001f * (float)(k % 1000);
		if (!rc && fusecrt_session_set_input(s, name, buf, bytes, &e))
			rc = die(&e);
		free(buf);
	}
	if (!rc && fusecrt_session_run(s, &e))
		rc = die(&e);
	for (int i = 0; i < fusecrt_plan_noutputs(p) && !rc; i++) {
		const char *name = fusecrt_plan_output(p, i), *dt;
		size_t bytes;
		fusecrt_plan_tensor(p, name, &dt, NULL, NULL, &bytes, &e);
		unsigned char *buf = malloc(bytes ? bytes : 1);
		if (fusecrt_session_get_output(s, name, buf, bytes, &e)) {
			rc = die(&e);
		} else {
			double sum = 0;
			for (size_t k = 0; k < bytes; k++)
				sum += !strcmp(dt, "f32") ? (k % 4 ? 0 : ((float *)buf)[k / 4]) : buf[k];
			printf("output %s %s sum=%.6g\n", name, dt, sum);
		}
		free(buf);
	}
	fusecrt_session_close(s);
	fusecrt_plan_free(p);
	return rc;
}
