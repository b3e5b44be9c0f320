# fusec: ahead-of-time fusion compiler. See README.md.
#
# make            build build/fusec
# make deps       install the Debian packages fusec needs (root)
# make test       unit tests (cmocka) and CLI tests
# make sanitize   the same under ASan and UBSan, in build-san/
# make valgrind   the same under valgrind memcheck (slow; tests/valgrind/run.sh)
# make bench      search-and-plan throughput sweep (docs/benchmarks.md)
# make fuzz       libFuzzer target for the graph readers (tests/fuzz/README.md)
# make static     build/fusec-static, build/static/libfusec.so: LLVM linked in, for GPU machines without LLVM
# make install    PREFIX=/usr/local DESTDIR=: fusec, fusec-run, libfusecrt.{a,so} and
#                 libfusec.{a,so} with their headers (<fusecrt.h>, <fusec.h>),
#                 fusecrt.pc and fusec.pc, the Python package lib/python/fusec
#                 (ctypes over both; docs/python.md), man pages, bash completion
# make clean

BUILD       ?= build
LLVM_CONFIG ?= llvm-config-19
PKG_CONFIG  ?= pkg-config
CC          ?= cc
WERROR      ?=

WARN    = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
          -Wno-unused-parameter -Wvla $(WERROR)
CFLAGS ?= -O2 -g
DEPS_CFLAGS := $(shell $(PKG_CONFIG) --cflags libcjson yaml-0.1 libprotobuf-c libcrypto 2>/dev/null) \
               -I$(shell $(LLVM_CONFIG) --includedir 2>/dev/null)
DEPS_LIBS   := $(shell $(PKG_CONFIG) --libs libcjson yaml-0.1 libprotobuf-c libcrypto 2>/dev/null) \
               $(shell $(LLVM_CONFIG) --ldflags 2>/dev/null) \
               $(shell $(LLVM_CONFIG) --libs 2>/dev/null) -lm
CMOCKA_CFLAGS := $(shell $(PKG_CONFIG) --cflags cmocka 2>/dev/null)
CMOCKA_LIBS   := $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null)
ALL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -pthread $(WARN) $(CFLAGS) $(DEPS_CFLAGS) -MMD -MP

# Sources, per layer from the ground up. Keep each list sorted.
SUPPORT_SRC = support/files.c support/support.c
IR_SRC      = ir/build.c ir/dim_expr.c ir/doc.c ir/infer.c ir/infer_sym.c ir/liveness.c ir/ops.c ir/read_json.c ir/read_yaml.c ir/relative.c
ONNX_SRC    = onnx/builders.c onnx/every.c onnx/import.c onnx/load.c onnx/ops.c onnx/ops_index.c onnx/ops_math.c onnx/ops_resize.c onnx/patterns.c onnx/proto.c onnx/values.c
PASSES_SRC  = passes/attention.c passes/block.c passes/dump.c passes/explain.c passes/explorer.c passes/fuser_elemwise.c passes/fuser_matmul.c passes/fuser_nhwc.c passes/fuser_probe.c passes/fuser_reduce.c passes/fuser_reduce_bcast.c passes/fusers.c passes/intset.c passes/kmajor.c passes/layout.c passes/log.c passes/log_json.c passes/plan_store.c passes/precision.c passes/processor.c passes/rebuild.c passes/record.c passes/rotary.c passes/row_order.c passes/score.c passes/siblings.c passes/simplify.c passes/verify.c passes/view_map.c passes/views.c
CODEGEN_SRC = codegen/coop.c codegen/emit_par.c codegen/eval.c codegen/frame.c codegen/host_exec.c codegen/jit.c codegen/json_write.c codegen/kcache.c codegen/kernel_elemwise.c codegen/kernel_join_window.c codegen/kernel_matmul.c codegen/kernel_reduce.c codegen/launch_rule.c codegen/lower.c codegen/math.c codegen/matmul_attention.c codegen/matmul_conv.c codegen/matmul_depthwise.c codegen/matmul_epilogue.c codegen/matmul_gemv.c codegen/matmul_kernel.c codegen/matmul_mma.c codegen/matmul_pick.c codegen/matmul_shape.c codegen/matmul_simt.c codegen/matmul_stage.c codegen/matmul_tile.c codegen/matmul_wgmma.c codegen/matmul_ws.c codegen/module.c codegen/plan.c codegen/reduce_plain.c codegen/reduce_plan.c codegen/toolbox.c codegen/values.c
LIB_SRC     = lib/fusec.c lib/outputs.c lib/pipeline.c
HOST_SRC    = host/bounds.c host/check.c host/constants.c host/host.c host/interp.c host/interp_run.c host/npy.c
CMD_SRC     = cmd/bench.c cmd/compile.c cmd/explain.c cmd/fusec.c cmd/graphviz.c cmd/import.c cmd/normalize.c cmd/ops.c cmd/result_cache.c cmd/run.c cmd/run_cpu.c cmd/run_cuda.c
RT_SRC      = runtime/bench.c runtime/plan_read.c runtime/runtime.c
TEST_SRC    = tests/unit/main.c tests/unit/graphgen.c tests/unit/test_backends.c tests/unit/test_check.c tests/unit/test_codegen.c tests/unit/test_coop.c tests/unit/test_dim_expr.c tests/unit/test_hostile.c tests/unit/test_infer.c tests/unit/test_interp.c tests/unit/test_json_write.c tests/unit/test_math.c tests/unit/test_onnx.c tests/unit/test_readers.c tests/unit/test_relative.c tests/unit/test_runtime.c tests/unit/test_search.c
BENCH_SRC   = tests/bench/bench_search.c tests/bench/gen_graph.c

CORE_SRC = $(SUPPORT_SRC) $(IR_SRC) $(PASSES_SRC) $(CODEGEN_SRC) $(HOST_SRC) $(ONNX_SRC) $(RT_SRC) $(LIB_SRC)
CORE_OBJ = $(CORE_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/onnx.pb-c.o
CMD_OBJ  = $(CMD_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)
# fusec-run: the runtime alone, without LLVM or libyaml (libc, libm, libdl, cJSON).
RUN_OBJ  = $(addprefix $(BUILD)/,cmd/fusec_run.o codegen/launch_rule.o ir/dim_expr.o ir/ops.o host/host.o host/npy.o support/files.o support/support.o) \
           $(RT_SRC:%.c=$(BUILD)/%.o)

# The shared libraries too: the Python package (lib/python, docs/python.md) runs
# over them in place with PYTHONPATH=lib/python.
all: $(BUILD)/fusec $(BUILD)/fusec-run $(BUILD)/libfusec.so $(BUILD)/libfusecrt.so

$(BUILD)/fusec: $(CORE_OBJ) $(CMD_OBJ)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(DEPS_LIBS) -ldl

$(BUILD)/fusec-run: $(RUN_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs libcjson libcrypto) -ldl -lm

# A host-only stand-in for libcuda.so.1 that runs the tests/runtime fixture's kernels.
$(BUILD)/tests/fakecuda.so: tests/runtime/fakecuda.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) -Wno-missing-prototypes $(CFLAGS) \
	  -shared -fPIC -o $@ $<

# The same without cuLaunchKernelEx (a driver before CUDA 12).
$(BUILD)/tests/fakecuda_noex.so: tests/runtime/fakecuda.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_POSIX_C_SOURCE=200809L -DFAKECUDA_NO_LAUNCH_EX $(WARN) \
	  -Wno-missing-prototypes $(CFLAGS) -shared -fPIC -o $@ $<

# fusec with LLVM linked in statically, for a GPU machine that has no LLVM (it
# still needs libcjson.so.1 and libyaml-0.so.2 beside it or installed).
LLVM_STATIC_LIBS = $(shell $(LLVM_CONFIG) --link-static --libs core nvptx passes orcjit native bitreader linker ipo 2>/dev/null)
$(BUILD)/fusec-static: $(CORE_OBJ) $(CMD_OBJ)
	$(CXX) $(CFLAGS) -o $@ $^ -L$(shell $(LLVM_CONFIG) --libdir) $(LLVM_STATIC_LIBS) \
		$(shell $(PKG_CONFIG) --libs libcjson yaml-0.1 libprotobuf-c libcrypto) -lz $(wildcard /usr/lib/*/libzstd.so.1) \
		-lrt -ldl -lm -lpthread -Wl,--gc-sections

static: $(BUILD)/fusec-static $(BUILD)/static/libfusec.so

# The runtime as a library (libfusecrt.a, libfusecrt.so): plan loading, the driver
# through dlopen, launches and timing, with the host tensors and .npy it uses.
LIBRT_SRC = runtime/fusecrt.c runtime/bench.c runtime/plan_read.c runtime/runtime.c codegen/launch_rule.c ir/dim_expr.c host/host.c host/npy.c ir/ops.c support/files.c support/support.c
LIBRT_OBJ = $(LIBRT_SRC:%.c=$(BUILD)/pic/%.o)
$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -c -o $@ $<
$(BUILD)/libfusecrt.a: $(LIBRT_OBJ)
	rm -f $@
	$(AR) rcs $@ $^
$(BUILD)/libfusecrt.so: $(LIBRT_OBJ) runtime/fusecrt.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,libfusecrt.so.0 -Wl,--version-script=runtime/fusecrt.map -o $@ $(LIBRT_OBJ) \
	  $(shell $(PKG_CONFIG) --libs libcjson libcrypto) -ldl -lm

# The compiler as a library (libfusec.a, libfusec.so; lib/fusec.h): every layer but
# the runtime and cmd/, position-independent. The shared library exports the
# fusec_ API only (lib/fusec.map).
LIBFUSEC_SRC = $(SUPPORT_SRC) $(IR_SRC) $(PASSES_SRC) $(CODEGEN_SRC) $(HOST_SRC) $(ONNX_SRC) $(LIB_SRC)
LIBFUSEC_OBJ = $(LIBFUSEC_SRC:%.c=$(BUILD)/pic/%.o) $(BUILD)/pic/gen/onnx.pb-c.o
$(BUILD)/pic/onnx/%.o: onnx/%.c $(BUILD)/gen/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(BUILD)/gen -fPIC -c -o $@ $<
$(BUILD)/pic/gen/onnx.pb-c.o: $(BUILD)/gen/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(CFLAGS) $(DEPS_CFLAGS) -fPIC -c -o $@ $<
$(BUILD)/libfusec.a: $(LIBFUSEC_OBJ)
	rm -f $@
	$(AR) rcs $@ $^
$(BUILD)/libfusec.so: $(LIBFUSEC_OBJ) lib/fusec.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,libfusec.so.0 -Wl,--version-script=lib/fusec.map \
	  -Wl,--no-undefined -o $@ $(LIBFUSEC_OBJ) $(DEPS_LIBS) -ldl -pthread
lib: $(BUILD)/libfusecrt.a $(BUILD)/libfusecrt.so $(BUILD)/libfusec.a $(BUILD)/libfusec.so

# The compiler as a library linked like fusec-static (Python's fusec.compile on
# such a machine: FUSEC_LIBDIR=build/static, beside libfusecrt.so). Below
# LIBFUSEC_OBJ's definition: a rule's prerequisites are expanded where it is read.
$(BUILD)/static/libfusec.so: $(LIBFUSEC_OBJ) lib/fusec.map
	@mkdir -p $(dir $@)
	$(CXX) $(CFLAGS) -shared -Wl,-soname,libfusec.so.0 -Wl,--version-script=lib/fusec.map \
	  -Wl,--no-undefined -o $@ $(LIBFUSEC_OBJ) -L$(shell $(LLVM_CONFIG) --libdir) $(LLVM_STATIC_LIBS) \
	  $(shell $(PKG_CONFIG) --libs libcjson yaml-0.1 libprotobuf-c libcrypto) -lz $(wildcard /usr/lib/*/libzstd.so.1) \
	  -lrt -ldl -lm -pthread -Wl,--gc-sections

PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR      = $(DESTDIR)$(PREFIX)/bin
LIBDIR      = $(DESTDIR)$(PREFIX)/lib
INCDIR      = $(DESTDIR)$(PREFIX)/include
MANDIR      = $(DESTDIR)$(PREFIX)/share/man/man1
COMPDIR     = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
# Two self-contained headers, <fusecrt.h> and <fusec.h> (C11 and C++17); the internal
# API stays in the tree.
install: all lib
	install -d $(BINDIR) $(LIBDIR)/pkgconfig $(MANDIR) $(COMPDIR)
	install -m 755 $(BUILD)/fusec $(BUILD)/fusec-run $(BINDIR)/
	install -m 644 $(BUILD)/libfusecrt.a $(LIBDIR)/
	install -m 755 $(BUILD)/libfusecrt.so $(LIBDIR)/libfusecrt.so.0
	ln -sf libfusecrt.so.0 $(LIBDIR)/libfusecrt.so
	install -d $(INCDIR)
	install -m 644 runtime/fusecrt.h $(INCDIR)/fusecrt.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(shell sed -n 's/^#define FUSEC_VERSION "\(.*\)"/\1/p' support/support.h)|' \
	  docs/fusecrt.pc.in > $(LIBDIR)/pkgconfig/fusecrt.pc
	install -m 644 $(BUILD)/libfusec.a $(LIBDIR)/
	install -m 755 $(BUILD)/libfusec.so $(LIBDIR)/libfusec.so.0
	ln -sf libfusec.so.0 $(LIBDIR)/libfusec.so
	install -m 644 lib/fusec.h $(INCDIR)/fusec.h
	install -d $(DESTDIR)$(PREFIX)/share/fusec/python/fusec
	install -m 644 lib/python/fusec/*.py $(DESTDIR)$(PREFIX)/share/fusec/python/fusec/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(shell sed -n 's/^#define FUSEC_VERSION "\(.*\)"/\1/p' support/support.h)|' \
	  -e 's|@LLVM_LIBS@|$(shell $(LLVM_CONFIG) --ldflags 2>/dev/null) $(shell $(LLVM_CONFIG) --libs 2>/dev/null)|' \
	  docs/fusec.pc.in > $(LIBDIR)/pkgconfig/fusec.pc
	install -m 644 docs/man/fusec.1 docs/man/fusec-run.1 $(MANDIR)/
	install -m 644 docs/completion/fusec $(COMPDIR)/fusec

$(BUILD)/unit: $(CORE_OBJ) $(TEST_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(DEPS_LIBS) $(CMOCKA_LIBS) -ldl

$(BUILD)/tests/%.o: tests/%.c $(BUILD)/gen/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -I$(BUILD)/gen -c -o $@ $<

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# ONNX: the protobuf-c code for Debian's onnx.proto (libonnx-dev), generated here.
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
$(BUILD)/gen/onnx.pb-c.c: $(ONNX_PROTO)
	@mkdir -p $(dir $@)
	protoc-c --c_out=$(BUILD)/gen -I$(dir $(ONNX_PROTO)) $(ONNX_PROTO)
$(BUILD)/gen/onnx.pb-c.h: $(BUILD)/gen/onnx.pb-c.c
$(BUILD)/gen/onnx.pb-c.o: $(BUILD)/gen/onnx.pb-c.c
	$(CC) -std=c11 $(CFLAGS) $(DEPS_CFLAGS) -c -o $@ $<
$(BUILD)/onnx/%.o: onnx/%.c $(BUILD)/gen/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(BUILD)/gen -c -o $@ $<

# CLI tests first, the cmocka run last: `make test` ends with its summary line.
test: all $(BUILD)/unit $(BUILD)/tests/fakecuda.so $(BUILD)/tests/fakecuda_noex.so $(BUILD)/onnx_conformance
	FUSEC=$(BUILD)/fusec BUILD=$(BUILD) sh tests/cli/run.sh
	$(BUILD)/onnx_conformance -q -v --strict --list tests/onnx/fast.list $(ONNX_TESTDATA)/node
	$(BUILD)/onnx_conformance -q --strict tests/onnx/models tests/onnx/pool tests/onnx/extra
	cd tests && sh unit/run.sh ../$(BUILD)/unit

# ONNX backend node tests from libonnx-testdata (docs/onnx.md); not part of `make test`,
# which runs the subset in tests/onnx/fast.list.
ONNX_TESTDATA ?= /usr/share/libonnx-testdata/data
$(BUILD)/onnx_conformance: $(BUILD)/tests/onnx/conformance.o $(BUILD)/cmd/run_cpu.o $(CORE_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(DEPS_LIBS) -ldl
$(BUILD)/tests/onnx/conformance.o: tests/onnx/conformance.c $(BUILD)/gen/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(BUILD)/gen -c -o $@ $<
onnx-conformance: $(BUILD)/onnx_conformance
	$(BUILD)/onnx_conformance -v $(ONNX_TESTDATA)/node

# Accuracy sweep of codegen/math.c against libm (docs/math.md); MATH_POINTS per function.
MATH_POINTS ?= 4194304
$(BUILD)/math_accuracy: $(BUILD)/tests/bench/math_accuracy.o $(CORE_OBJ)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(DEPS_LIBS) -ldl
math-accuracy: $(BUILD)/math_accuracy
	$(BUILD)/math_accuracy $(MATH_POINTS)

# Search-and-plan throughput sweep (docs/benchmarks.md); not part of `make test`.
# BENCH_LAYERS: transformer sizes; BENCH_RANDOM: ops of the random-DAG point.
BENCH_LAYERS ?= 100 1000 3000
BENCH_RANDOM ?= 20000
BENCH_LAYERS2D ?= 100 300 1000 3000
$(BUILD)/bench_search: $(BUILD)/tests/bench/bench_search.o $(CORE_OBJ)
	$(CC) $(CFLAGS) -pthread -o $@ $^ $(DEPS_LIBS) -ldl
$(BUILD)/gen_graph: $(BUILD)/tests/bench/gen_graph.o
	$(CC) $(CFLAGS) -o $@ $^ -lm
bench: $(BUILD)/bench_search $(BUILD)/gen_graph $(BUILD)/fusec
	sh tests/bench/search_sweep.sh $(BUILD) "$(BENCH_LAYERS)" "$(BENCH_RANDOM)" "$(BENCH_LAYERS2D)"
	sh tests/bench/compile_sweep.sh $(BUILD)

# libFuzzer target for the graph readers (tests/fuzz/README.md): IR and lib only.
FUZZ_CC ?= clang-14
FUZZ_SRC = tests/fuzz/fuzz_read.c support/support.c $(IR_SRC)
$(BUILD)/fuzz_read: $(FUZZ_SRC) ir/ir.h ir/doc.h ir/ops.def support/support.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) -O1 -g -fno-omit-frame-pointer \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(shell $(PKG_CONFIG) --cflags libcjson yaml-0.1) -o $@ $(FUZZ_SRC) \
	  $(shell $(PKG_CONFIG) --libs libcjson yaml-0.1 libcrypto) -lm
# libFuzzer target for the runtime's plan reader: a plan.json and a PTX stub.
FUZZ_PLAN_SRC = tests/fuzz/fuzz_plan.c runtime/plan_read.c runtime/runtime.c codegen/launch_rule.c ir/dim_expr.c support/support.c support/files.c ir/ops.c host/host.c host/npy.c
$(BUILD)/fuzz_plan: $(FUZZ_PLAN_SRC) runtime/rt.h runtime/rt_driver.h support/support.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) -O1 -g -fno-omit-frame-pointer \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(shell $(PKG_CONFIG) --cflags libcjson libcrypto) -o $@ $(FUZZ_PLAN_SRC) \
	  $(shell $(PKG_CONFIG) --libs libcjson libcrypto) -ldl -lm
fuzz: $(BUILD)/fuzz_read $(BUILD)/fuzz_plan

# Every fuzz target for FUZZ_RUNS inputs (the ONNX reader FUZZ_RUNS_ONNX, of whole
# models) from the seed corpora with a fixed seed (tests/fuzz/smoke.sh): a
# reproducible gate, part of CI.
FUZZ_RUNS ?= 200000
FUZZ_RUNS_ONNX ?= 60000
fuzz-smoke: $(BUILD)/fuzz_read $(BUILD)/fuzz_plan $(BUILD)/fuzz_onnx $(BUILD)/tests/fakecuda.so
	sh tests/fuzz/smoke.sh $(BUILD) $(FUZZ_RUNS) $(FUZZ_RUNS_ONNX)

# libFuzzer target for the ONNX reader: seed it with tests/onnx/models/*/model.onnx.
FUZZ_ONNX_SRC = tests/fuzz/fuzz_onnx.c $(SUPPORT_SRC) $(IR_SRC) $(HOST_SRC) $(ONNX_SRC) \
                $(BUILD)/gen/onnx.pb-c.c
$(BUILD)/fuzz_onnx: $(FUZZ_ONNX_SRC) $(BUILD)/gen/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -D_POSIX_C_SOURCE=200809L -O1 -g -fno-omit-frame-pointer \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I$(BUILD)/gen \
	  $(shell $(PKG_CONFIG) --cflags libcjson yaml-0.1 libprotobuf-c libcrypto) -o $@ $(FUZZ_ONNX_SRC) \
	  $(shell $(PKG_CONFIG) --libs libcjson yaml-0.1 libprotobuf-c libcrypto) -lm
fuzz-onnx: $(BUILD)/fuzz_onnx

# make test under valgrind memcheck, each process's log kept (tests/valgrind/run.sh;
# hours of CPU: docs/reliability.md). VG_PARTS: unit conformance cli (default all).
VG_OUT ?= $(BUILD)/valgrind
valgrind: $(BUILD)/fusec $(BUILD)/unit $(BUILD)/fusec-run $(BUILD)/tests/fakecuda.so $(BUILD)/onnx_conformance
	sh tests/valgrind/run.sh $(BUILD) $(VG_OUT) $(VG_PARTS)

sanitize:
	$(MAKE) BUILD=build-san CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

deps:
	@missing=""; for p in llvm-19-dev libcjson-dev libyaml-dev libcmocka-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata libssl-dev pkg-config make gcc \
	           python3 python3-jsonschema python3-yaml python3-numpy; do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	else echo "all dependencies present"; fi

clean:
	rm -rf build build-san

.PHONY: all test sanitize valgrind deps clean static math-accuracy fuzz fuzz-onnx fuzz-smoke bench onnx-conformance lib install
-include $(filter-out $(BUILD)/gen/%,$(CORE_OBJ:.o=.d)) $(filter-out $(BUILD)/pic/gen/%,$(LIBFUSEC_OBJ:.o=.d)) $(CMD_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/cmd/fusec_run.d \
         $(BENCH_SRC:%.c=$(BUILD)/%.d)
