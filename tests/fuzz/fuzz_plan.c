/* fuzz_plan.c: libFuzzer target for the runtime's plan reader (make fuzz; see
 * README.md).
 *
 * An input is a plan and a PTX stub: the bytes up to the first line "//PTX" are the
 * plan.json text, the rest the PTX. The plan goes through rt_plan_parse; each
 * variant of an accepted plan (one per arch) is checked against the PTX's entry
 * signatures (rt_ptx_check_params), its byte counts are taken and every launch's
 * arguments packed. When FUSEC_LIBCUDA names the stand-in driver
 * (build/tests/fakecuda.so), a plan that passes is also run on it: the PTX is
 * written to a file every variant points at (its hash put in the plan), the session
 * opens (the variant for the stand-in's device, JIT stand-in, allocations, argument
 * packing) and runs when its grids are small. A plan for every size is bound first
 * (at its smallest, then its largest sizes). A rejected plan
 * must come back with a one-line message; anything else traps. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/rt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char ptx_file[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* the stand-in driver's memory is host memory: keep it small */
	setenv("FAKECUDA_MEM", "67108864", 0);
	snprintf(ptx_file, sizeof ptx_file, "/tmp/fusec-fuzz-plan-%d.ptx", (int)getpid());
	return 0;
}

static void check_message(const Diag *d)
{
	if (!d->msg[0] || strchr(d->msg, '\n'))
		__builtin_trap();
}

/* Threads a run would emulate on the stand-in driver. */
static double work(const RtPlan *p)
{
	double w = 0;
	for (int i = 0; i < p->nlaunches; i++) {
		const RtLaunch *l = &p->launches[i];
		w += (double)l->grid[0] * l->grid[1] * l->grid[2] * l->block[0] * l->block[1] * l->block[2];
	}
	return w;
}

static void on_driver(RtPlan *p, const char *ptx, size_t len)
{
	FILE *f = fopen(ptx_file, "wb");
	if (!f)
		return;
	fwrite(ptx, 1, len, f);
	fclose(f);
	/* a fuzzer cannot forge the hash the plan must record: it is made to match, so
	 * that the loading behind the check is reached (the check: t_runtime.sh) */
	static char sha[65];
	sha256_hex(ptx, len, sha);
	for (int v = 0; v < p->nvariants; v++) {
		p->variants[v].ptx_path = ptx_file;
		p->variants[v].ptx_sha256 = sha;
	}
	rt_plan_use(p, 0);
	RtSession *s = NULL;
	Diag d;
	memset(&d, 0, sizeof d);
	RtStatus st = rt_session_open(&s, p, 0, &d);
	if (st == RT_OK && work(p) < 1e6)
		st = rt_session_run(s, &d);
	if (st != RT_OK && !d.msg[0])   /* a driver's JIT log may span lines */
		__builtin_trap();
	rt_session_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *ptx = "";
	size_t plen = size, xlen = 0;
	for (size_t i = 0; i + 6 <= size; i++)
		if ((i == 0 || text[i - 1] == '\n') && memcmp(text + i, "//PTX\n", 6) == 0) {
			plen = i;
			ptx = text + i + 6;
			xlen = size - i - 6;
			break;
		}
	Diag d;
	memset(&d, 0, sizeof d);
	RtPlan *p = rt_plan_parse("fuzz/f.plan.json", text, plen, &d);
	if (!p) {
		check_message(&d);
		return 0;
	}
	/* a plan for every size (fusec-plan/2): bound at the smallest and then the
	 * largest sizes of its dims, each bound plan as any other from here; a refused
	 * binding is a one-line message */
	for (int pass = 0; pass < 2 && p->ndim_names; pass++) {
		memset(&d, 0, sizeof d);
		if (rt_plan_bind(p, pass ? p->dim_hi : p->dim_lo, &d) != RT_OK) {
			check_message(&d);
			if (!p->bound) {
				rt_plan_free(p);
				return 0;
			}
		}
	}
	(void)rt_plan_bytes_in(p);
	(void)rt_plan_bytes_out(p);
	bool checked = true;
	for (int v = 0; v < p->nvariants; v++) {
		rt_plan_use(p, v);
		uint64_t *bufs = calloc((size_t)p->ntensors + 1, sizeof *bufs);
		for (int i = 0; i < p->nlaunches; i++) {
			const RtLaunch *l = &p->launches[i];
			(void)rt_launch_bytes(p, l);
			RtArgSlot *slots = rt_slots_new(l);
			void **argv = calloc((size_t)l->nargs + 1, sizeof *argv);
			rt_pack_args(l, bufs, slots, argv);
			free(slots);
			free(argv);
		}
		free(bufs);
		memset(&d, 0, sizeof d);
		if (checked && rt_ptx_check_params(p, ptx, xlen, &d) < 0) {
			check_message(&d);
			checked = false;
		}
	}
	rt_plan_use(p, 0);
	if (checked && getenv("FUSEC_LIBCUDA"))
		on_driver(p, ptx, xlen);
	rt_plan_free(p);
	return 0;
}
