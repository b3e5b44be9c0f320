/* jit.c: a thin wrapper on ORC LLJIT (LLVM C API) for running generated IR on
 * the host.
 *
 * LLVM 19's C API can only make a ThreadSafeContext around a fresh LLVMContext,
 * so a module built elsewhere is moved into the JIT by writing it to bitcode and
 * reading it back in a context the JIT owns. That costs a little time per module
 * and buys a simple rule for callers: build IR in any context, hand over both.
 * Before the hand-over the module gets the host triple and data layout, is
 * verified, and is optimized with the new pass manager, so what runs here went
 * through the same kind of pipeline as the PTX does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "jit.h"

struct CgJit {
	LLVMOrcLLJITRef jit;
	LLVMTargetMachineRef tm;  /* host machine, for the optimization pipeline */
	char *triple;             /* owned copy of the JIT's triple */
	char *passes;             /* pipeline for add_module; NULL: none */
};

static void jit_error(Diag *d, const char *what, LLVMErrorRef err)
{
	char *msg = LLVMGetErrorMessage(err);
	diag_set(d, "jit", 0, 0, "%s: %s", what, msg);
	LLVMDisposeErrorMessage(msg);
}

static char *jit_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = xmalloc(n);
	memcpy(p, s, n);
	return p;
}

/* The host's target machine at level: the JIT's instruction selection and register
 * allocation run at it (LLVMCodeGenLevelNone: FastISel and the fast allocator). */
static LLVMTargetMachineRef host_tm(const char *triple, LLVMCodeGenOptLevel level)
{
	LLVMTargetRef target;
	char *msg = NULL;
	if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
		LLVMDisposeMessage(msg);
		return NULL;
	}
	char *cpu = LLVMGetHostCPUName();
	char *features = LLVMGetHostCPUFeatures();
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, features, level,
							  LLVMRelocDefault, LLVMCodeModelJITDefault);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(features);
	return tm;
}

static CgJit *jit_new(bool quick, Diag *d)
{
	if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
		diag_set(d, "jit", 0, 0, "the native target is not available in this LLVM build");
		return NULL;
	}
	LLVMOrcLLJITBuilderRef b = NULL;
	if (quick) {
		char *triple = LLVMGetDefaultTargetTriple();
		LLVMTargetMachineRef tm = host_tm(triple, LLVMCodeGenLevelNone);
		LLVMDisposeMessage(triple);
		if (!tm) {
			diag_set(d, "jit", 0, 0, "cannot create a target machine for the host");
			return NULL;
		}
		/* the builder takes the machine builder, which takes tm */
		b = LLVMOrcCreateLLJITBuilder();
		LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
			b, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
	}
	LLVMOrcLLJITRef jit;
	LLVMErrorRef err = LLVMOrcCreateLLJIT(&jit, b);
	if (err) {
		jit_error(d, "cannot create the JIT", err);
		return NULL;
	}
	CgJit *j = xcalloc(1, sizeof *j);
	j->jit = jit;
	j->triple = jit_strdup(LLVMOrcLLJITGetTripleString(jit));
	j->passes = jit_strdup(quick ? "default<O0>" : "default<O2>");
	j->tm = host_tm(j->triple, quick ? LLVMCodeGenLevelNone : LLVMCodeGenLevelDefault);
	if (!j->tm) {
		diag_set(d, "jit", 0, 0, "cannot create a target machine for %s", j->triple);
		cg_jit_free(j);
		return NULL;
	}
	return j;
}

CgJit *cg_jit_new(Diag *d)
{
	return jit_new(false, d);
}

CgJit *cg_jit_new_quick(Diag *d)
{
	return jit_new(true, d);
}

void cg_jit_set_passes(CgJit *j, const char *passes)
{
	free(j->passes);
	j->passes = passes && *passes ? jit_strdup(passes) : NULL;
}

const char *cg_jit_triple(const CgJit *j)
{
	return j->triple;
}

/* Move mod (and ctx) into a fresh ThreadSafeContext; NULL with d on error. */
static LLVMModuleRef jit_rehome(LLVMModuleRef mod, LLVMContextRef ctx,
				LLVMOrcThreadSafeContextRef tsc, Diag *d)
{
	LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(mod);
	LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	LLVMModuleRef out = NULL;
	if (LLVMParseBitcodeInContext2(LLVMOrcThreadSafeContextGetContext(tsc), bc, &out)) {
		diag_set(d, "jit", 0, 0, "cannot move the module into the JIT's context");
		out = NULL;
	}
	LLVMDisposeMemoryBuffer(bc);
	return out;
}

int cg_jit_add_module(CgJit *j, LLVMModuleRef mod, LLVMContextRef ctx, Diag *d)
{
	LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
	LLVMModuleRef m = jit_rehome(mod, ctx, tsc, d);
	if (!m) {
		LLVMOrcDisposeThreadSafeContext(tsc);
		return -1;
	}
	LLVMSetTarget(m, j->triple);
	LLVMSetDataLayout(m, LLVMOrcLLJITGetDataLayoutStr(j->jit));

	char *msg = NULL;
	if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
		diag_set(d, "jit", 0, 0, "invalid module: %s", msg);
		LLVMDisposeMessage(msg);
		LLVMDisposeModule(m);
		LLVMOrcDisposeThreadSafeContext(tsc);
		return -1;
	}
	LLVMDisposeMessage(msg);

	if (j->passes) {
		LLVMPassBuilderOptionsRef opt = LLVMCreatePassBuilderOptions();
		LLVMErrorRef err = LLVMRunPasses(m, j->passes, j->tm, opt);
		LLVMDisposePassBuilderOptions(opt);
		if (err) {
			jit_error(d, "optimization failed", err);
			LLVMDisposeModule(m);
			LLVMOrcDisposeThreadSafeContext(tsc);
			return -1;
		}
	}

	LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m, tsc);
	LLVMOrcDisposeThreadSafeContext(tsc);
	LLVMErrorRef err = LLVMOrcLLJITAddLLVMIRModule(j->jit, LLVMOrcLLJITGetMainJITDylib(j->jit), tsm);
	if (err) {
		jit_error(d, "cannot add the module", err);
		return -1;
	}
	return 0;
}

void *cg_jit_lookup(CgJit *j, const char *name, Diag *d)
{
	LLVMOrcExecutorAddress addr = 0;
	LLVMErrorRef err = LLVMOrcLLJITLookup(j->jit, &addr, name);
	if (err) {
		jit_error(d, "symbol lookup failed", err);
		return NULL;
	}
	if (!addr) {
		diag_set(d, "jit", 0, 0, "symbol '%s' has address 0", name);
		return NULL;
	}
	return (void *)(uintptr_t)addr;
}

void cg_jit_free(CgJit *j)
{
	if (!j)
		return;
	if (j->jit) {
		LLVMErrorRef err = LLVMOrcDisposeLLJIT(j->jit);
		if (err)
			LLVMConsumeError(err);
	}
	if (j->tm)
		LLVMDisposeTargetMachine(j->tm);
	free(j->triple);
	free(j->passes);
	free(j);
}
