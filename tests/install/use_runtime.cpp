// use_runtime.cpp: a C++17 program that includes the installed <fusecrt.h> and runs
// a compiled plan through it, as use_runtime.c does in C: f32 inputs filled with
// 0.001 * (i % 1000), one run, the sum of every f32 output. tests/cli/t_install.sh
// builds it with the C++ compiler it finds and compares the two programs' outputs.
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <fusecrt.h>

namespace {

struct PlanFree {
	void operator()(fusecrt_plan *p) const { fusecrt_plan_free(p); }
};
struct SessionClose {
	void operator()(fusecrt_session *s) const { fusecrt_session_close(s); }
};

int fail(const fusecrt_error &e)
{
	std::fprintf(stderr, "%s%s%s\n", e.file, e.file[0] ? ": " : "", e.message);
	return e.status;
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: use_runtime_cpp PLAN\n");
		return 2;
	}
	fusecrt_error e{};
	std::unique_ptr<fusecrt_plan, PlanFree> p(fusecrt_plan_load(argv[1], &e));
	if (!p)
		return fail(e);
	std::unique_ptr<fusecrt_session, SessionClose> s(fusecrt_session_open(p.get(), 0, &e));
	if (!s)
		return fail(e);
	std::printf("arch %s\n", fusecrt_session_arch(s.get()));
	for (int i = 0; i < fusecrt_plan_ninputs(p.get()); i++) {
		const char *name = fusecrt_plan_input(p.get(), i), *dt = nullptr;
		size_t bytes = 0;
		if (fusecrt_plan_tensor(p.get(), name, &dt, nullptr, nullptr, &bytes, &e))
			return fail(e);
		std::vector<unsigned char> buf(bytes);
		if (!std::strcmp(dt, "f32"))
			for (size_t k = 0; k < bytes / 4; k++) {
				float v = 0.001f * static_cast<float>(k % 1000);
				std::memcpy(&buf[k * 4], &v, 4);
			}
		if (fusecrt_session_set_input(s.get(), name, buf.data(), bytes, &e))
			return fail(e);
	}
	if (fusecrt_session_run(s.get(), &e))
		return fail(e);
	for (int i = 0; i < fusecrt_plan_noutputs(p.get()); i++) {
		const char *name = fusecrt_plan_output(p.get(), i), *dt = nullptr;
		size_t bytes = 0;
		fusecrt_plan_tensor(p.get(), name, &dt, nullptr, nullptr, &bytes, &e);
		std::vector<unsigned char> buf(bytes);
		if (fusecrt_session_get_output(s.get(), name, buf.data(), bytes, &e))
			return fail(e);
		double sum = 0;
		bool f32 = !std::strcmp(dt, "f32");
		for (size_t k = 0; k < bytes; k += f32 ? 4 : 1) {
			float v = 0;
			if (f32)
				std::memcpy(&v, &buf[k], 4);
			sum += f32 ? v : buf[k];
		}
		std::printf("output %s %s sum=%.6g\n", name, dt, sum);
	}
	return 0;
}
