// use_compiler.cpp: a C++17 program that includes the installed <fusec.h> and
// <fusecrt.h>, compiles a YAML graph from a string and from the file GRAPH into
// OUT, checks the structured error of a graph with a typo, and loads the plan with
// fusecrt_ (a session on the stand-in driver in tests/cli/t_install.sh). It prints
// what use_compiler.c prints for the same steps, which the test compares.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fusec.h>
#include <fusecrt.h>

namespace {

struct ResultFree {
	void operator()(fusec_result *r) const { fusec_result_free(r); }
};
using Result = std::unique_ptr<fusec_result, ResultFree>;

const std::string graph = R"(format: fusec-graph/1
name: axpy
inputs:
  x: {dtype: f32, shape: [256]}
  y: {dtype: f32, shape: [256]}
ops:
  - {op: mul_scalar, in: [x], scalar: 2.0, out: ax}
  - {op: add, in: [ax, y], out: z}
outputs: [z]
)";

const std::string bad = R"(format: fusec-graph/1
inputs:
  x: {dtype: f32, shape: [4, 4]}
ops:
  - {op: relu, inn: [x], out: y}
outputs: [y]
)";

void show(const fusec_result *r)
{
	std::printf("compiled %s: %ld ops, %ld launches, %ld kernels, %.0f bytes moved\n",
		    fusec_result_name(r), fusec_result_ops(r), fusec_result_launches(r),
		    fusec_result_kernels(r), fusec_result_bytes_moved(r));
	for (int i = 0; i < fusec_result_nfiles(r); i++)
		std::printf("  file %s\n", fusec_result_file(r, i));
}

int fail(const fusec_error &e)
{
	std::fprintf(stderr, "%s:%d:%d: %s\n", e.file, e.line, e.column, e.message);
	return e.code;
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: use_compiler_cpp GRAPH OUT\n");
		return 2;
	}
	fusec_options o;
	fusec_options_init(&o);
	fusec_error e{};
	std::printf("%s\n", fusec_version());
	std::string out = argv[2];
	Result r(fusec_compile_bytes("axpy.yaml", graph.data(), graph.size(), &o,
				     (out + "/str").c_str(), &e));
	if (!r)
		return fail(e);
	show(r.get());
	size_t len = 0;
	const char *plan = static_cast<const char *>(fusec_result_file_data(r.get(), 0, &len));
	std::printf("plan in memory: %s\n", plan && len > 0 && plan[len - 1] == '\n' ? "yes" : "no");
	// the graph on the host: the cpu backend's kernels, then the interpreter
	std::vector<float> x(256), y(256, 1.0f), zc(256), zi(256);
	for (int i = 0; i < 256; i++)
		x[i] = static_cast<float>(i);
	const void *in[2] = {x.data(), y.data()};
	void *outc[1] = {zc.data()}, *outi[1] = {zi.data()};
	const char *dt = nullptr;
	int rank = 0;
	int64_t dims[8] = {};
	size_t bytes = 0;
	const char *zn = fusec_result_output(r.get(), 0, &dt, &rank, dims, &bytes);
	if (fusec_run(r.get(), FUSEC_RUN_CPU, in, outc, &e) ||
	    fusec_run(r.get(), FUSEC_RUN_INTERP, in, outi, &e))
		return fail(e);
	std::printf("host run: %d inputs, output %s %s[%lld] of %zu bytes, %s[5] = %g, cpu = interp: %s\n",
		    fusec_result_ninputs(r.get()), zn, dt, static_cast<long long>(dims[0]), bytes, zn,
		    static_cast<double>(zc[5]), zc == zi ? "yes" : "no");
	r.reset(fusec_compile_file(argv[1], &o, (out + "/file").c_str(), &e));
	if (!r)
		return fail(e);
	show(r.get());
	r.reset(fusec_compile_bytes("typo.yaml", bad.data(), bad.size(), &o, nullptr, &e));
	std::printf("bad graph: %s, code %d, %s:%d:%d: %s\n", r ? "compiled" : "refused", e.code,
		    e.file, e.line, e.column, e.message);
	if (r)
		return 1;
	o.precision = "bf16";
	r.reset(fusec_compile_bytes("axpy.yaml", graph.data(), graph.size(), &o, nullptr, &e));
	plan = r ? static_cast<const char *>(fusec_result_file_data(r.get(), 0, &len)) : nullptr;
	std::printf("bf16: %ld ops, plan says bf16: %s\n", r ? fusec_result_ops(r.get()) : -1L,
		    plan && std::strstr(plan, "\"precision\":\"bf16\"") ? "yes" : "no");
	o.precision = nullptr;
	o.arch = "sm_100";
	r.reset(fusec_compile_bytes("axpy.yaml", graph.data(), graph.size(), &o, nullptr, &e));
	std::printf("bad arch: code %d: %.40s\n", e.code, e.message);
	o.arch = nullptr;
	std::unique_ptr<char, void (*)(void *)> text(fusec_explain(argv[1], &o, "0", 0, &e),
						     fusec_free);
	if (!text)
		return fail(e);
	std::printf("explain: %.*s\n", static_cast<int>(std::strcspn(text.get(), "\n")),
		    text.get());
	fusecrt_error re{};
	std::unique_ptr<fusecrt_plan, void (*)(fusecrt_plan *)> p(
		fusecrt_plan_load((out + "/file").c_str(), &re), fusecrt_plan_free);
	std::unique_ptr<fusecrt_session, void (*)(fusecrt_session *)> s(
		p ? fusecrt_session_open(p.get(), 0, &re) : nullptr, fusecrt_session_close);
	if (!s) {
		std::fprintf(stderr, "%s: %s\n", re.file, re.message);
		return re.status;
	}
	std::printf("plan loaded: arch %s, %d inputs, %d outputs\n", fusecrt_session_arch(s.get()),
		    fusecrt_plan_ninputs(p.get()), fusecrt_plan_noutputs(p.get()));
	return 0;
}
