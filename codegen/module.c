/* module.c: the one owner of LLVM objects in a compile.
 *
 * A CgModule holds the context (with our diagnostic handler), the module, the target
 * machine and the builder, and disposes of all of them in cg_module_free. The
 * handler never exits: it records the first error-severity diagnostic, and every step
 * that hands control to LLVM (building, optimizing, emitting) checks the record
 * afterwards and turns it into a Diag. LLVM 19's NVPTX backend answers a call to
 * llvm.exp.f32 with an error diagnostic and then emits PTX that calls nothing, so
 * finish also refuses any call to a declaration the backend cannot resolve.
 *
 * Kernels are deduplicated here: a spec is hashed (kind, ops with their placeholder
 * numbers, written set), and cg_kernel (frame.c) returns the kernel already built for
 * an equal spec.
 *
 * In chunked mode the kernels are not all built into one module: after a kernel
 * whose spec hash is 0 mod CHUNK_DIV, after a heavy kernel (heavy_kernel), or once a
 * chunk holds CHUNK_MAX kernels, the
 * module and its context are set aside as a chunk and a fresh pair opens (in
 * cg_module_add), so that emit_par.c can optimize and emit the chunks on several
 * threads and cache each on its own. Chunk boundaries depend only on the kernels,
 * never on the threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "cg_impl.h"
#include "emit_par.h"
#include "math.h"

#define NVPTX_TRIPLE "nvptx64-nvidia-cuda"

static void cg_diag_handler(LLVMDiagnosticInfoRef di, void *arg)
{
	CgModule *m = arg;
	if (LLVMGetDiagInfoSeverity(di) != LLVMDSError)
		return;
	char *s = LLVMGetDiagInfoDescription(di);
	if (!m->error) {
		size_t n = strlen(s) + 1;
		m->error = xmalloc(n);
		memcpy(m->error, s, n);
	}
	LLVMDisposeMessage(s);
}

int cg_module_check_diag(CgModule *m, Diag *d, const char *when)
{
	if (!m->error)
		return 0;
	diag_set(d, "codegen", 0, 0, "LLVM error while %s: %s", when, m->error);
	free(m->error);
	m->error = NULL;
	return -1;
}

void cg_module_set_error(CgModule *m, Diag *d, const char *fmt, ...)
{
	(void)m;
	char msg[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_set(d, "codegen", 0, 0, "%s", msg);
}

static int init_targets(CgTarget t)
{
	if (t == CG_TARGET_NVPTX) {
		LLVMInitializeNVPTXTargetInfo();
		LLVMInitializeNVPTXTarget();
		LLVMInitializeNVPTXTargetMC();
		LLVMInitializeNVPTXAsmPrinter();
		return 0;
	}
	return LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter() ? -1 : 0;
}

/* The processors of LLVM 19's NVPTX backend; any other name would make LLVM print a
 * warning and silently use a default. */
static const char *const known_arches[] = {
	"sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50", "sm_52",
	"sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80",
	"sm_86", "sm_87", "sm_89", "sm_90", "sm_90a",
};

bool cg_arch_known(const char *arch)
{
	for (size_t i = 0; i < COUNTOF(known_arches); i++)
		if (!strcmp(arch, known_arches[i]))
			return true;
	return false;
}

bool cg_arch_supported(const char *arch)
{
	return !strncmp(arch, "sm_", 3) && atoi(arch + 3) >= CG_MIN_ARCH;
}

void cg_arch_list(Buf *b)
{
	int n = 0, k = 0;
	for (size_t i = 0; i < COUNTOF(known_arches); i++)
		n += cg_arch_supported(known_arches[i]);
	for (size_t i = 0; i < COUNTOF(known_arches); i++)
		if (cg_arch_supported(known_arches[i]))
			buf_printf(b, "%s%s", k++ ? k == n ? " and " : ", " : "", known_arches[i]);
}

enum { CHUNK_DIV = 8, CHUNK_MAX = 32, CHUNK_HEAVY_INSNS = 800 }; /* heavy_kernel */

/* The NVPTX back end's optimization level: 3 (LLVMCodeGenLevelAggressive, the
 * default) or, with FUSEC_CODEGEN_LEVEL=2, LLVMCodeGenLevelDefault. At 2 NVPTX runs
 * EarlyCSE where 3 runs GVN, twice, after its address reassociation: a quarter of
 * the back end's time on the tiled matmuls, with PTX that differs a little
 * (docs/benchmarks.md has the measurements; the GPU decides the default). */
int cg_nvptx_codegen_level(void)
{
	const char *v = getenv("FUSEC_CODEGEN_LEVEL");
	return v && !strcmp(v, "2") ? 2 : 3;
}

/* The cpu backend's kernels built for compile speed (FUSEC_CPU_QUICK=1): no
 * optimization passes and the JIT's code generator at LLVMCodeGenLevelNone. The
 * values are the same (no pass here changes a floating-point result); the run is
 * slower, the build about twice as fast (the tests set it). */
bool cg_cpu_quick(void)
{
	const char *v = getenv("FUSEC_CPU_QUICK");
	return v && !strcmp(v, "1");
}

static LLVMTargetMachineRef make_tm(const CgOptions *opt, const char *triple)
{
	LLVMTargetRef target;
	char *msg = NULL;
	if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
		LLVMDisposeMessage(msg);
		return NULL;
	}
	bool host = opt->target != CG_TARGET_NVPTX;
	char *cpu = host ? LLVMGetHostCPUName() : NULL;
	char *features = host ? LLVMGetHostCPUFeatures() : NULL;
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
		target, triple, host ? cpu : opt->arch, host ? features : "",
		host || cg_nvptx_codegen_level() == 3 ? LLVMCodeGenLevelAggressive
						       : LLVMCodeGenLevelDefault,
		LLVMRelocDefault, host ? LLVMCodeModelJITDefault : LLVMCodeModelDefault);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(features);
	return tm;
}

LLVMTargetMachineRef cg_module_target_machine(const CgModule *m)
{
	return make_tm(&m->opt, m->triple);
}

/* A fresh context, module, builder and types: at creation, and per chunk. */
static void open_llvm(CgModule *m)
{
	m->ctx = LLVMContextCreate();
	LLVMContextSetDiagnosticHandler(m->ctx, cg_diag_handler, m);
	m->mod = LLVMModuleCreateWithNameInContext(m->opt.name, m->ctx);
	LLVMSetTarget(m->mod, m->triple);
	LLVMSetDataLayout(m->mod, m->datalayout);
	m->b = LLVMCreateBuilderInContext(m->ctx);
	m->t_void = LLVMVoidTypeInContext(m->ctx);
	m->t_i1 = LLVMInt1TypeInContext(m->ctx);
	m->t_i8 = LLVMInt8TypeInContext(m->ctx);
	m->t_i16 = LLVMInt16TypeInContext(m->ctx);
	m->t_i32 = LLVMInt32TypeInContext(m->ctx);
	m->t_i64 = LLVMInt64TypeInContext(m->ctx);
	m->t_f16 = LLVMHalfTypeInContext(m->ctx);
	m->t_f32 = LLVMFloatTypeInContext(m->ctx);
	m->t_f64 = LLVMDoubleTypeInContext(m->ctx);
	m->t_ptr = LLVMPointerTypeInContext(m->ctx, m->opt.target == CG_TARGET_NVPTX ? 1 : 0);
}

void cg_module_chunked(CgModule *m)
{
	m->chunked = m->opt.target == CG_TARGET_NVPTX && m->nentries == 0;
	const char *nt = getenv("FUSEC_NO_TWINS");
	m->no_twins = nt && *nt && strcmp(nt, "0");
}

void cg_module_close_chunk(CgModule *m)
{
	if (m->nentries == m->chunk_first)
		return;
	if (m->nchunks == m->capchunks) {
		m->capchunks = m->capchunks ? 2 * m->capchunks : 16;
		m->chunks = xrealloc(m->chunks, sizeof *m->chunks * (size_t)m->capchunks);
	}
	m->chunks[m->nchunks++] = (struct CgChunk){m->ctx, m->mod, m->chunk_first,
						    m->nentries - m->chunk_first};
	m->chunk_first = m->nentries;
	LLVMDisposeBuilder(m->b);
	open_llvm(m);
}

CgModule *cg_module_new(const CgOptions *o, Arena *a, Diag *d)
{
	CgOptions opt = *o;
	if (!opt.arch)
		opt.arch = CG_DEFAULT_ARCH;
	if (!opt.name)
		opt.name = "fusec";
	if (opt.target == CG_TARGET_NVPTX && !cg_arch_known(opt.arch)) {
		diag_set(d, "codegen", 0, 0,
			 "unknown arch '%s' (LLVM 19 knows sm_20 to sm_90a, e.g. sm_80, sm_90)",
			 opt.arch);
		return NULL;
	}
	if (opt.target == CG_TARGET_NVPTX && !cg_arch_supported(opt.arch)) {
		diag_set(d, "codegen", 0, 0, "arch '%s' is older than the kernels need: the "
			 "lowest supported is sm_%d", opt.arch, CG_MIN_ARCH);
		return NULL;
	}
	if (init_targets(opt.target)) {
		diag_set(d, "codegen", 0, 0, "the %s target is not available in this LLVM",
			 opt.target == CG_TARGET_NVPTX ? "NVPTX" : "native");
		return NULL;
	}
	char *triple = opt.target == CG_TARGET_NVPTX ? NULL : LLVMGetDefaultTargetTriple();
	const char *tt = triple ? triple : NVPTX_TRIPLE;
	LLVMTargetRef target;
	char *msg = NULL;
	if (LLVMGetTargetFromTriple(tt, &target, &msg)) {
		diag_set(d, "codegen", 0, 0, "no LLVM target for %s: %s", tt, msg ? msg : "");
		LLVMDisposeMessage(msg);
		LLVMDisposeMessage(triple);
		return NULL;
	}
	LLVMTargetMachineRef tm = make_tm(&opt, tt);
	if (!tm) {
		diag_set(d, "codegen", 0, 0, "cannot create a target machine for %s (%s)", tt,
			 opt.arch);
		LLVMDisposeMessage(triple);
		return NULL;
	}

	CgModule *m = xcalloc(1, sizeof *m);
	m->opt = opt;
	m->arena = a;
	m->tm = tm;
	m->triple = xmalloc(strlen(tt) + 1);
	strcpy(m->triple, tt);
	LLVMDisposeMessage(triple);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	char *dl = LLVMCopyStringRepOfTargetData(td);
	m->datalayout = xmalloc(strlen(dl) + 1);
	strcpy(m->datalayout, dl);
	LLVMDisposeMessage(dl);
	LLVMDisposeTargetData(td);
	open_llvm(m);
	return m;
}

void cg_module_free(CgModule *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nentries; i++) {
		free(m->entries[i].ops);
		free(m->entries[i].written);
	}
	free(m->entries);
	for (int i = 0; i < m->nchunks; i++) {
		if (m->chunks[i].mod)
			LLVMDisposeModule(m->chunks[i].mod);
		if (m->chunks[i].ctx)
			LLVMContextDispose(m->chunks[i].ctx);
	}
	free(m->chunks);
	free(m->twinkeys);
	free(m->triple);
	free(m->datalayout);
	if (m->b)
		LLVMDisposeBuilder(m->b);
	if (!m->taken) {
		LLVMDisposeModule(m->mod);
		LLVMContextDispose(m->ctx);
	}
	LLVMDisposeTargetMachine(m->tm);
	free(m->error);
	free(m);
}

LLVMModuleRef cg_module_llvm(CgModule *m)
{
	return m->taken ? NULL : m->mod;
}

const char *cg_module_arch(const CgModule *m)
{
	return m->opt.arch;
}

bool cg_module_is_host(const CgModule *m)
{
	return m->opt.target == CG_TARGET_HOST;
}

bool cg_module_pdl(const CgModule *m)
{
	const char *a = m->opt.arch ? m->opt.arch : CG_DEFAULT_ARCH;
	return m->opt.target == CG_TARGET_NVPTX && !strncmp(a, "sm_", 3) && atoi(a + 3) >= 90;
}

bool cg_module_allow_tf32(const CgModule *m)
{
	return m->opt.allow_tf32;
}

bool cg_module_allow_3xtf32(const CgModule *m)
{
	return m->opt.allow_3xtf32;
}

const char *cg_kernel_kind_name(CgKernelKind k)
{
	switch (k) {
	case CG_KERNEL_ELEMWISE: return "elemwise";
	case CG_KERNEL_SINGLE: return "single";
	case CG_KERNEL_MATMUL: return "matmul";
	case CG_KERNEL_REDUCE: return "reduce";
	}
	return "?";
}

/* ---- deduplication --------------------------------------------------------- */

uint64_t cg_spec_hash(const CgKernelSpec *s)
{
	uint64_t h = hash_u64(HASH_SEED, (uint64_t)s->kind);
	h = hash_u64(h, (uint64_t)s->variant);
	for (int i = 0; i < s->nops; i++) {
		const RelOp *op = &s->ops[i];
		h = hash_u64(h, ir_rel_hash(op));
		h = hash_u64(h, (uint64_t)op->place0 << 16 | op->nplace);
	}
	for (int i = 0; i < s->nwritten; i++)
		if (s->written[i])
			h = hash_u64(h, (uint64_t)i + 1);
	if (s->nhwc)   /* only then, so that every other kernel keeps its name */
		h = hash_u64(h, 0x6e687763ull << 32 | (uint64_t)s->nhwc);
	if (s->red_long)   /* likewise: other code for the same relative form */
		h = hash_u64(h, 0x726c6f6eull << 32 | s->red_long);
	if (s->red_row) {  /* and the row length and block a kernel is built for */
		h = hash_u64(h, 0x72726f77ull << 32 ^ (uint64_t)s->red_row);
		h = hash_u64(h, (uint64_t)s->red_g << 32 | (uint32_t)s->red_r);
	}
	return h;
}

static bool written_at(const bool *w, int n, int i)
{
	return i < n && w[i];
}

static bool spec_equal(const CgEntry *e, const CgKernelSpec *s)
{
	if (e->kind != s->kind || e->nops != s->nops || e->variant != s->variant ||
	    e->nhwc != s->nhwc || e->red_long != s->red_long || e->red_row != s->red_row ||
	    e->red_g != s->red_g || e->red_r != s->red_r)
		return false;
	for (int i = 0; i < s->nops; i++)
		if (!ir_rel_equal(&e->ops[i], &s->ops[i]) || e->ops[i].place0 != s->ops[i].place0)
			return false;
	int n = e->nwritten > s->nwritten ? e->nwritten : s->nwritten;
	for (int i = 0; i < n; i++)
		if (written_at(e->written, e->nwritten, i) != written_at(s->written, s->nwritten, i))
			return false;
	return true;
}

CgEntry *cg_module_find(CgModule *m, const CgKernelSpec *s, uint64_t hash)
{
	for (int i = 0; i < m->nentries; i++)
		if (m->entries[i].hash == hash && spec_equal(&m->entries[i], s))
			return &m->entries[i];
	return NULL;
}

/* Whether kernel k (just built into the open module) is one that LLVM takes long
 * over, a tiled matmul or a cooperative reduction (0.1-0.25 s each): such a kernel
 * closes its chunk, so that two of them are not optimized one after the other on
 * one thread while another thread idles. Asked before the twin search (which may
 * make k a stub), so that the chunks are the same with and without twins; like the
 * rest of the chunking rule, this depends on the kernels only. */
static bool heavy_kernel(CgModule *m, const CgKernel *k)
{
	LLVMValueRef fn = LLVMGetNamedFunction(m->mod, k->name);
	int n = 0;
	for (LLVMBasicBlockRef b = fn ? LLVMGetFirstBasicBlock(fn) : NULL; b; b = LLVMGetNextBasicBlock(b))
		for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
			if (++n >= CHUNK_HEAVY_INSNS)
				return true;
	return false;
}

void cg_module_add(CgModule *m, const CgKernelSpec *s, uint64_t hash, CgKernel *k)
{
	if (m->nentries == m->capentries) {
		m->capentries = m->capentries ? 2 * m->capentries : 8;
		m->entries = xrealloc(m->entries, sizeof *m->entries * (size_t)m->capentries);
	}
	CgEntry *e = &m->entries[m->nentries++];
	e->hash = hash;
	e->kind = s->kind;
	e->variant = s->variant;
	e->nhwc = s->nhwc;
	e->red_long = s->red_long;
	e->red_row = s->red_row;
	e->red_g = s->red_g;
	e->red_r = s->red_r;
	e->nops = s->nops;
	/* one block: the RelOps, then their tensors */
	size_t nt = 0;
	for (int i = 0; i < s->nops; i++)
		nt += (size_t)s->ops[i].nin + s->ops[i].nout;
	char *p = xmalloc(sizeof(RelOp) * (size_t)s->nops + sizeof(RelTensor) * nt + 1);
	e->ops = (RelOp *)p;
	RelTensor *t = (RelTensor *)(p + sizeof(RelOp) * (size_t)s->nops);
	for (int i = 0; i < s->nops; i++) {
		e->ops[i] = s->ops[i];
		int n = s->ops[i].nin + s->ops[i].nout;
		memcpy(t, s->ops[i].t, sizeof *t * (size_t)n);
		e->ops[i].t = t;
		t += n;
	}
	e->nwritten = s->nwritten;
	e->written = xmalloc((size_t)s->nwritten + 1);
	if (s->nwritten)
		memcpy(e->written, s->written, (size_t)s->nwritten);
	e->k = k;
	e->twin = -1;
	bool heavy = m->chunked && heavy_kernel(m, k);
	cg_module_twin(m, k);
	if (m->chunked && (hash % CHUNK_DIV == 0 || m->nentries - m->chunk_first >= CHUNK_MAX || heavy))
		cg_module_close_chunk(m);
}

/* ---- twins ------------------------------------------------------------------
 *
 * Two kernels of different specs can have the same code: the transformer's Q and K
 * projections differ only in whether their input may be overwritten, which no
 * kernel family reads. LLVM would optimize and emit the same function twice (a
 * tiled matmul takes 0.2 s). So, once a large kernel is built, the text of
 * everything its PTX depends on (the function's IR, the kernel's own module
 * globals, its nvvm.annotations), with its name replaced by a mark, is compared
 * with that of the earlier large kernels. On a match the new function is replaced
 * by a stub that keeps its name, type and globals (so that the chunk's PTX keeps
 * every line outside the function in place) and emit_par.c puts the earlier
 * kernel's PTX, renamed, in place of the stub's. The result is byte for byte what
 * compiling both would give (tests/cli compares with FUSEC_NO_TWINS=1). */

enum { TWIN_MIN_INSNS = 400 };   /* smaller kernels are cheap to compile: not compared */

static bool large_function(LLVMValueRef fn)
{
	int n = 0;
	for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b; b = LLVMGetNextBasicBlock(b))
		for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
			if (++n >= TWIN_MIN_INSNS)
				return true;
	return false;
}

/* Append s to out with every occurrence of name replaced by a mark. */
static void put_renamed(Buf *out, const char *s, const char *name)
{
	size_t n = strlen(name);
	for (const char *p; (p = strstr(s, name)); s = p + n) {
		buf_write(out, s, (size_t)(p - s));
		buf_puts(out, "\x01");
	}
	buf_puts(out, s);
}

static void put_value(Buf *out, LLVMValueRef v, const char *name)
{
	char *t = LLVMPrintValueToString(v);
	/* a metadata node prints after its address, "<0x...> = " */
	const char *body = t, *eq = strstr(t, "> = ");
	if (!strncmp(t, "<0x", 3) && eq)
		body = eq + 4;
	put_renamed(out, body, name);
	buf_putc(out, '\n');
	LLVMDisposeMessage(t);
}

/* Does global g belong to kernel name (name_smem, name_shared0, ...)? */
static bool own_global(LLVMValueRef g, const char *name, size_t n)
{
	size_t len;
	const char *gn = LLVMGetValueName2(g, &len);
	return len > n && !strncmp(gn, name, n) && gn[n] == '_';
}

/* The text of kernel name in mod that its PTX depends on, names masked. */
static void twin_text(LLVMModuleRef mod, const char *name, Buf *out)
{
	LLVMValueRef fn = LLVMGetNamedFunction(mod, name);
	size_t n = strlen(name);
	put_value(out, fn, name);
	for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g))
		if (own_global(g, name, n))
			put_value(out, g, name);
	unsigned na = LLVMGetNamedMetadataNumOperands(mod, "nvvm.annotations");
	if (na) {
		LLVMValueRef *nodes = xmalloc(sizeof *nodes * na);
		LLVMGetNamedMetadataOperands(mod, "nvvm.annotations", nodes);
		for (unsigned i = 0; i < na; i++) {
			unsigned k = LLVMGetMDNodeNumOperands(nodes[i]);
			if (!k)
				continue;
			LLVMValueRef *ops = xmalloc(sizeof *ops * k);
			LLVMGetMDNodeOperands(nodes[i], ops);
			if (ops[0] == fn)
				put_value(out, nodes[i], name);
			free(ops);
		}
		free(nodes);
	}
}

/* The module (open or closed chunk) that holds entry i. */
static LLVMModuleRef entry_module(CgModule *m, int i)
{
	for (int c = 0; c < m->nchunks; c++)
		if (i >= m->chunks[c].first && i < m->chunks[c].first + m->chunks[c].n)
			return m->chunks[c].mod;
	return m->mod;
}

/* Whether an instruction of fn reads global g, directly or through a constant
 * expression (a GEP at a constant offset). */
static bool fn_uses_global(LLVMValueRef fn, LLVMValueRef g)
{
	for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b; b = LLVMGetNextBasicBlock(b))
		for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) {
			int n = LLVMGetNumOperands(i);
			for (int k = 0; k < n; k++) {
				LLVMValueRef v = LLVMGetOperand(i, (unsigned)k);
				if (v == g || (v && LLVMIsAConstantExpr(v) && LLVMGetNumOperands(v) > 0 &&
					       LLVMGetOperand(v, 0) == g))
					return true;
			}
		}
	return false;
}

/* Replace fn by a stub of the same name, type and calling convention that touches
 * the kernel's own globals, and the launch's dynamic shared memory where fn used it
 * (so that they stay, as the original's do: the chunk's PTX outside the function,
 * its declarations included, is what compiling fn would give) and returns. */
static void make_stub(CgModule *m, LLVMValueRef fn, const char *name)
{
	LLVMTypeRef ft = LLVMGlobalGetValueType(fn);
	unsigned cc = LLVMGetFunctionCallConv(fn);
	LLVMValueRef dyn = LLVMGetNamedGlobal(m->mod, "fusec_dynamic_shared");
	bool uses_dyn = dyn && fn_uses_global(fn, dyn);
	LLVMDeleteFunction(fn);
	fn = LLVMAddFunction(m->mod, name, ft);
	LLVMSetFunctionCallConv(fn, cc);
	LLVMBuilderRef bld = LLVMCreateBuilderInContext(m->ctx);
	LLVMPositionBuilderAtEnd(bld, LLVMAppendBasicBlockInContext(m->ctx, fn, "entry"));
	size_t n = strlen(name);
	for (LLVMValueRef g = LLVMGetFirstGlobal(m->mod); g; g = LLVMGetNextGlobal(g))
		if (own_global(g, name, n))
			LLVMSetVolatile(LLVMBuildStore(bld, LLVMConstInt(m->t_i8, 0, 0), g), 1);
	if (uses_dyn)
		LLVMSetVolatile(LLVMBuildStore(bld, LLVMConstInt(m->t_i8, 0, 0), dyn), 1);
	LLVMBuildRetVoid(bld);
	LLVMDisposeBuilder(bld);
}

void cg_module_twin(CgModule *m, const CgKernel *k)
{
	if (!m->chunked || m->no_twins || m->nentries == 0)
		return;
	int self = m->nentries - 1;
	LLVMValueRef fn = LLVMGetNamedFunction(m->mod, k->name);
	if (!fn || !large_function(fn))
		return;
	Buf t = {0};
	twin_text(m->mod, k->name, &t);
	uint64_t h = hash_bytes(HASH_SEED, t.data, t.len);
	h = hash_u64(h, (uint64_t)strlen(k->name));
	for (int i = 0; i < m->ntwinkeys; i++) {
		const struct CgTwinKey *tk = &m->twinkeys[i];
		const CgEntry *o = &m->entries[tk->entry];
		if (tk->hash != h || strlen(o->k->name) != strlen(k->name))
			continue;
		Buf u = {0};
		twin_text(entry_module(m, tk->entry), o->k->name, &u);
		bool same = u.len == t.len && !memcmp(u.data, t.data, t.len);
		buf_free(&u);
		if (same) {
			make_stub(m, fn, k->name);
			m->entries[self].twin = tk->entry;
			buf_free(&t);
			return;
		}
	}
	buf_free(&t);
	if (m->ntwinkeys == m->captwinkeys) {
		m->captwinkeys = m->captwinkeys ? 2 * m->captwinkeys : 16;
		m->twinkeys = xrealloc(m->twinkeys, sizeof *m->twinkeys * (size_t)m->captwinkeys);
	}
	m->twinkeys[m->ntwinkeys++] = (struct CgTwinKey){h, self};
}

/* ---- finishing and emission ------------------------------------------------ */

/* Intrinsic families no backend of ours can lower without a libm. */
static bool bad_intrinsic(const char *name)
{
	static const char *const bad[] = {
		"llvm.exp.", "llvm.exp2.", "llvm.exp10.", "llvm.log.", "llvm.log2.",
		"llvm.log10.", "llvm.sin.", "llvm.cos.", "llvm.tan.", "llvm.asin.",
		"llvm.acos.", "llvm.atan.", "llvm.sinh.", "llvm.cosh.", "llvm.tanh.",
		"llvm.pow.", "llvm.powi.", "llvm.ldexp.", "llvm.frexp.",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (!strncmp(name, bad[i], strlen(bad[i])))
			return true;
	return false;
}

/* Every called declaration must be something the backend resolves itself. */
int cg_check_calls(LLVMModuleRef mod, CgTarget target, Diag *d)
{
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		if (!LLVMIsDeclaration(f) || !LLVMGetFirstUse(f))
			continue;
		size_t len;
		const char *name = LLVMGetValueName2(f, &len);
		bool intrinsic = !strncmp(name, "llvm.", 5);
		if (!intrinsic || bad_intrinsic(name)) {
			diag_set(d, "codegen", 0, 0,
				 "kernel calls '%s', which the %s backend cannot resolve", name,
				 target == CG_TARGET_NVPTX ? "NVPTX" : "host");
			return -1;
		}
	}
	return 0;
}

int cg_module_finish(CgModule *m, Diag *d)
{
	if (m->finished)
		return 0;
	if (m->chunked) {
		diag_set(d, "codegen", 0, 0, "internal: a chunked module is finished by emit_par.c");
		return -1;
	}
	m->finished = true;
	char *msg = NULL;
	if (LLVMVerifyModule(m->mod, LLVMReturnStatusAction, &msg)) {
		diag_set(d, "codegen", 0, 0, "internal: invalid kernel IR: %.600s", msg);
		LLVMDisposeMessage(msg);
		return -1;
	}
	LLVMDisposeMessage(msg);
	if (m->opt.libdevice && m->opt.target == CG_TARGET_NVPTX &&
	    cg_math_link_libdevice(m->mod, m->opt.libdevice, d))
		return -1;
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	const char *pipe = m->opt.target == CG_TARGET_HOST && cg_cpu_quick() ? "default<O0>"
									      : "default<O3>";
	LLVMErrorRef err = LLVMRunPasses(m->mod, pipe, m->tm, po);
	LLVMDisposePassBuilderOptions(po);
	if (err) {
		char *e = LLVMGetErrorMessage(err);
		diag_set(d, "codegen", 0, 0, "optimization failed: %s", e);
		LLVMDisposeErrorMessage(e);
		return -1;
	}
	if (cg_module_check_diag(m, d, "optimizing"))
		return -1;
	if (!m->opt.no_call_check && cg_check_calls(m->mod, m->opt.target, d))
		return -1;
	return 0;
}

int cg_module_emit_ptx(CgModule *m, Buf *out, Diag *d)
{
	if (m->opt.target != CG_TARGET_NVPTX || !m->finished || m->taken) {
		diag_set(d, "codegen", 0, 0, "internal: PTX asked of a module that is not a finished NVPTX module");
		return -1;
	}
	LLVMMemoryBufferRef mb = NULL;
	char *msg = NULL;
	if (LLVMTargetMachineEmitToMemoryBuffer(m->tm, m->mod, LLVMAssemblyFile, &msg, &mb)) {
		diag_set(d, "codegen", 0, 0, "PTX emission failed: %s", msg ? msg : "");
		LLVMDisposeMessage(msg);
		free(m->error);
		m->error = NULL;
		return -1;
	}
	if (cg_module_check_diag(m, d, "emitting PTX")) {
		LLVMDisposeMemoryBuffer(mb);
		return -1;
	}
	buf_write(out, LLVMGetBufferStart(mb), LLVMGetBufferSize(mb));
	LLVMDisposeMemoryBuffer(mb);
	return 0;
}

int cg_module_emit_ll(CgModule *m, Buf *out, Diag *d)
{
	if (m->taken) {
		diag_set(d, "codegen", 0, 0, "internal: IR asked of a module given away");
		return -1;
	}
	char *s = LLVMPrintModuleToString(m->mod);
	buf_puts(out, s);
	LLVMDisposeMessage(s);
	return 0;
}

int cg_module_take(CgModule *m, LLVMModuleRef *mod, LLVMContextRef *ctx, Diag *d)
{
	if (m->opt.target != CG_TARGET_HOST || !m->finished || m->taken) {
		diag_set(d, "codegen", 0, 0, "internal: only a finished host module can be taken");
		return -1;
	}
	/* the handler points at m, which the JIT outlives */
	LLVMContextSetDiagnosticHandler(m->ctx, NULL, NULL);
	LLVMDisposeBuilder(m->b);
	m->b = NULL;
	*mod = m->mod;
	*ctx = m->ctx;
	m->taken = true;
	return 0;
}
