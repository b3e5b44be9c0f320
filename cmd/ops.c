/* ops.c: `fusec ops [--json]`: every op fusec knows, from ir/ops.def: its name in
 * graph files, burn's display variant, arity, required and optional attributes,
 * the dtypes its rule accepts, and the fusers that take it (asked of the fusers,
 * passes/fuser_probe.c). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../passes/passes.h"
#include "cmd.h"

static const char ops_usage[] =
	"usage: fusec ops [--json]\n"
	"\n"
	"List every op of the graph format: its name, burn's display variant, how many\n"
	"inputs it takes, its required and optional attributes, the dtypes it accepts,\n"
	"and the fusers that take it (\"after matmul\": only as a matmul's epilogue;\n"
	"\"ends a trace\": only after an elementwise op, at its input's last use).\n"
	"\n"
	"  --json         one JSON document instead of the table\n"
	"  --burn-exact   the fusers of a --burn-exact search (NHWCRelayout too)\n";

static void attr_list(Buf *b, unsigned bits)
{
	bool first = true;
	for (int i = 0; i < A_COUNT_; i++)
		if (bits & (1u << i)) {
			buf_printf(b, "%s%s", first ? "" : ",", ir_attr_name(1u << i));
			first = false;
		}
	if (first)
		buf_putc(b, '-');
}

static void arity(char *buf, size_t n, const OpInfo *o)
{
	if (o->nin_max < 0)
		snprintf(buf, n, "%d+", o->nin_min);
	else if (o->nin_min == o->nin_max)
		snprintf(buf, n, "%d", o->nin_min);
	else
		snprintf(buf, n, "%d-%d", o->nin_min, o->nin_max);
}

static void fuser_list(Buf *b, int kind, bool burn)
{
	unsigned epi, first = pass_fusers_taking(kind, burn, &epi),
		 end = pass_fusers_ending(kind, burn);
	bool any = false;
	for (int f = 0; f < pass_nfusers(); f++) {
		if (first & (1u << f))
			buf_printf(b, "%s%s", any ? ", " : "", pass_fuser_name(f));
		else if (epi & (1u << f))
			buf_printf(b, "%s%s (after matmul)", any ? ", " : "", pass_fuser_name(f));
		else if (end & (1u << f))
			buf_printf(b, "%s%s (ends a trace)", any ? ", " : "", pass_fuser_name(f));
		else
			continue;
		any = true;
	}
	if (!any)
		buf_puts(b, kind == OP_SYNC ? "- (ends a segment)" : "none (runs alone)");
}

static cJSON *attr_array(unsigned bits)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < A_COUNT_; i++)
		if (bits & (1u << i))
			cJSON_AddItemToArray(a, cJSON_CreateString(ir_attr_name(1u << i)));
	return a;
}

static void print_json(bool burn)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "format", "fusec-ops/1");
	cJSON *ops = cJSON_AddArrayToObject(root, "ops");
	for (int k = 0; k < OP_COUNT; k++) {
		const OpInfo *o = &ir_ops[k];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "op", o->file);
		cJSON_AddStringToObject(x, "variant", o->variant);
		cJSON_AddNumberToObject(x, "inputs_min", o->nin_min);
		if (o->nin_max < 0)
			cJSON_AddNullToObject(x, "inputs_max");
		else
			cJSON_AddNumberToObject(x, "inputs_max", o->nin_max);
		cJSON_AddItemToObject(x, "required", attr_array(o->required));
		cJSON_AddItemToObject(x, "optional", attr_array(o->optional));
		cJSON_AddStringToObject(x, "dtypes", ir_rule_dtypes(o->rule));
		unsigned epi, first = pass_fusers_taking(k, burn, &epi),
			 end = pass_fusers_ending(k, burn);
		cJSON *fa = cJSON_AddArrayToObject(x, "fusers"), *fe = cJSON_AddArrayToObject(x, "fusers_after_matmul");
		cJSON *fn = cJSON_AddArrayToObject(x, "fusers_ending");
		for (int f = 0; f < pass_nfusers(); f++) {
			if (first & (1u << f))
				cJSON_AddItemToArray(fa, cJSON_CreateString(pass_fuser_name(f)));
			if (epi & (1u << f))
				cJSON_AddItemToArray(fe, cJSON_CreateString(pass_fuser_name(f)));
			if (end & (1u << f))
				cJSON_AddItemToArray(fn, cJSON_CreateString(pass_fuser_name(f)));
		}
		cJSON_AddItemToArray(ops, x);
	}
	char *text = cJSON_Print(root);
	puts(text);
	cJSON_free(text);
	cJSON_Delete(root);
}

int cmd_ops(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, 'j'},
		{"burn-exact", no_argument, NULL, 'b'},
		{0, 0, 0, 0},
	};
	bool json = false, burn = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(ops_usage, stdout);
			return EXIT_OK;
		}
		if (c == 'j') {
			json = true;
			continue;
		}
		if (c == 'b') {
			burn = true;
			continue;
		}
		return cmd_bad_option("ops", longopts, "h", argv, optind);
	}
	if (optind != argc) {
		cmd_usage_error("ops", "takes no arguments");
		return EXIT_USAGE;
	}
	if (json) {
		print_json(burn);
		return EXIT_OK;
	}
	static const char *titles[7] = {"op", "variant", "inputs", "required", "optional",
					"dtypes", "fusers"};
	Buf cell[OP_COUNT + 1][7];
	memset(cell, 0, sizeof cell);
	int w[7] = {0};
	for (int k = 0; k <= OP_COUNT; k++) {
		for (int j = 0; j < 7; j++) {
			if (k == 0) {
				buf_puts(&cell[0][j], titles[j]);
				continue;
			}
			const OpInfo *o = &ir_ops[k - 1];
			char ar[16];
			switch (j) {
			case 0: buf_puts(&cell[k][j], o->file); break;
			case 1: buf_puts(&cell[k][j], o->variant); break;
			case 2: arity(ar, sizeof ar, o); buf_puts(&cell[k][j], ar); break;
			case 3: attr_list(&cell[k][j], o->required); break;
			case 4: attr_list(&cell[k][j], o->optional); break;
			case 5: buf_puts(&cell[k][j], ir_rule_dtypes(o->rule)); break;
			case 6: fuser_list(&cell[k][j], k - 1, burn); break;
			}
		}
		for (int j = 0; j < 7; j++)
			if ((int)cell[k][j].len > w[j])
				w[j] = (int)cell[k][j].len;
	}
	for (int k = 0; k <= OP_COUNT; k++) {
		for (int j = 0; j < 7; j++) {
			if (j < 6)
				printf("%-*s  ", w[j], cell[k][j].data);
			else
				printf("%s\n", cell[k][j].data);
			buf_free(&cell[k][j]);
		}
	}
	return EXIT_OK;
}
