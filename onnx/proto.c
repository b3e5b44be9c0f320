/* proto.c: ONNX's protobuf in: bytes -> ModelProto (protobuf-c, generated at build
 * time from Debian's onnx.proto), refusing a message that nests too deep; the
 * fusec dtype of each ONNX element type; tensors out of TensorProtos, with their
 * data inline (typed fields or raw_data) or in an external file beside the model.
 *
 * Everything read is untrusted: sizes are checked against the bytes actually
 * present before anything is allocated, external data paths must stay inside the
 * model's folder (no absolute paths, no ".."), and offsets and lengths must lie
 * within the file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "onnx_impl.h"

int onnx_dtype(int elem_type)
{
	switch (elem_type) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return DT_F32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return DT_F64;
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return DT_F16;
	case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return DT_BF16;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return DT_I64;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return DT_I32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return DT_I16;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return DT_I8;
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return DT_U8;
	case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return DT_BOOL;
	/* fusec has no uint16/uint32: they are held in the next wider signed type,
	 * which holds every value (docs/onnx.md) */
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return DT_I32;
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return DT_I64;
	}
	return -1;
}

const char *onnx_elem_name(int elem_type)
{
	static const char *const names[] = {
		"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
		"STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
		"COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
		"FLOAT8E5M2FNUZ", "UINT4", "INT4",
	};
	if (elem_type >= 0 && (size_t)elem_type < sizeof names / sizeof names[0])
		return names[elem_type];
	return "unknown";
}

/* ---- nesting ---------------------------------------------------------------------- */

/* protobuf-c unpacks a nested message by recursing, a stack frame or two per level,
 * and ONNX nests without end: a graph attribute holds a graph whose nodes hold graph
 * attributes, and a TypeProto a sequence of TypeProtos. A 138 KB model of 5,000
 * nested graphs overflowed the stack. So the wire format is walked first, with the
 * generated descriptors saying which fields are messages, to the depth of the
 * deepest one; a model nested deeper than ONNX_MAX_NESTING is refused before it is
 * unpacked. The walk recurses too, but never past that bound. It reads the wire as
 * protobuf-c does (tags and lengths of at most 5 bytes, varints of at most 10,
 * wire types 0, 1, 2 and 5); bytes it cannot read are corrupt to protobuf-c too,
 * which refuses them before descending, so the walk stops there and leaves the
 * message to protobuf-c. */

static bool wire_varint(const uint8_t **p, const uint8_t *end, int max, uint64_t *v)
{
	*v = 0;
	for (int i = 0; i < max && *p < end; i++) {
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* 1 when a message in [p, end) (of type desc) nests more than `left` levels, else 0. */
static int too_deep(const ProtobufCMessageDescriptor *desc, const uint8_t *p,
		    const uint8_t *end, int left)
{
	while (p < end) {
		uint64_t key, n;
		if (!(*p & 0xf8) || !wire_varint(&p, end, 5, &key))
			return 0;
		switch (key & 7) {
		case PROTOBUF_C_WIRE_TYPE_VARINT:
			if (!wire_varint(&p, end, 10, &n))
				return 0;
			break;
		case PROTOBUF_C_WIRE_TYPE_64BIT:
		case PROTOBUF_C_WIRE_TYPE_32BIT:
			n = (key & 7) == PROTOBUF_C_WIRE_TYPE_64BIT ? 8 : 4;
			if ((size_t)(end - p) < n)
				return 0;
			p += n;
			break;
		case PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED: {
			if (!wire_varint(&p, end, 5, &n) || n > (uint64_t)(end - p))
				return 0;
			const ProtobufCFieldDescriptor *f =
				protobuf_c_message_descriptor_get_field(desc, (unsigned)(key >> 3));
			if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
			    (left == 0 || too_deep(f->descriptor, p, p + n, left - 1)))
				return 1;
			p += n;
			break;
		}
		default:
			return 0;
		}
	}
	return 0;
}

Onnx__ModelProto *onnx_unpack(ProtobufCAllocator *pa, const void *buf, size_t len,
			      char *msg, size_t size)
{
	const uint8_t *p = buf;
	if (too_deep(&onnx__model_proto__descriptor, p, p + len, ONNX_MAX_NESTING - 1)) {
		snprintf(msg, size, "not supported: messages nested more than %d deep (graphs "
			 "in the attributes of graphs, or types in types)", ONNX_MAX_NESTING);
		return NULL;
	}
	Onnx__ModelProto *mp = onnx__model_proto__unpack(pa, len, p);
	if (!mp)
		snprintf(msg, size, "not a valid ONNX model (the protobuf does not parse: "
			 "truncated or corrupt)");
	return mp;
}

/* ---- external data ------------------------------------------------------------ */

bool onnx_safe_location(const char *loc)
{
	if (!loc[0] || loc[0] == '/')
		return false;
	for (const char *p = loc; *p;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p += n + (slash ? 1 : 0);
	}
	return true;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

/* Open loc beneath the folder dir, one component at a time, each with O_NOFOLLOW:
 * a symbolic link anywhere in loc (to a file, or a folder it passes through) fails
 * with ELOOP, so that a model cannot name a file outside its folder. The last
 * component is opened with O_NONBLOCK, so that a FIFO does not block the open (the
 * caller refuses anything but a regular file). The model's folder itself may be a
 * link: the user named it. Returns an fd, or -1 with errno set. */
static int open_beneath(const char *dir, const char *loc)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const char *p = loc;
	while (fd >= 0) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		const char *next = p + n;
		while (*next == '/')
			next++;
		bool last = !*next;
		char part[256];
		if (n >= sizeof part) {
			close(fd);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(part, p, n);
		part[n] = 0;
		if (!n || !strcmp(part, "."))
			strcpy(part, ".");   /* the folder itself: not a regular file */
		int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
			    (last ? O_NONBLOCK : O_DIRECTORY);
		int sub = openat(fd, part, flags);
		int e = errno;
		struct stat st;
		/* a link to a folder fails as ENOTDIR under O_DIRECTORY: say it is a link */
		if (sub < 0 && e == ENOTDIR && !fstatat(fd, part, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISLNK(st.st_mode))
			e = ELOOP;
		close(fd);
		errno = e;
		fd = sub;
		if (last)
			break;
		p = next;
	}
	return fd;
}

/* Read `want` bytes of tp's external data into dst. */
static int read_external(const Onnx__TensorProto *tp, const char *dir, void *dst, size_t want,
			 char *msg, size_t size)
{
	const char *loc = NULL;
	uint64_t off = 0, len = want;
	bool has_len = false;
	for (size_t i = 0; i < tp->n_external_data; i++) {
		const Onnx__StringStringEntryProto *e = tp->external_data[i];
		if (!e->key || !e->value)
			continue;
		if (!strcmp(e->key, "location"))
			loc = e->value;
		else if (!strcmp(e->key, "offset") && parse_u64(e->value, &off)) {
			snprintf(msg, size, "external data offset '%.40s' is not a number", e->value);
			return -1;
		} else if (!strcmp(e->key, "length")) {
			if (parse_u64(e->value, &len)) {
				snprintf(msg, size, "external data length '%.40s' is not a number",
					 e->value);
				return -1;
			}
			has_len = true;
		}
	}
	if (!loc) {
		snprintf(msg, size, "external data without a location");
		return -1;
	}
	if (!dir) {
		snprintf(msg, size, "external data '%.80s' but the model was not read from a file",
			 loc);
		return -1;
	}
	if (!onnx_safe_location(loc)) {
		snprintf(msg, size, "external data location '%.80s' leaves the model's folder", loc);
		return -1;
	}
	if (has_len && len != want) {
		snprintf(msg, size, "external data '%.80s' has length %llu, the tensor needs %zu",
			 loc, (unsigned long long)len, want);
		return -1;
	}
	int fd = open_beneath(dir, loc);
	struct stat st;
	if (fd < 0) {
		if (errno == ELOOP)
			snprintf(msg, size, "external data location '%.80s' is a symbolic link or "
				 "passes through one (refused: it could name any file)", loc);
		else
			snprintf(msg, size, "cannot open external data '%.80s' in '%.80s': %s", loc,
				 dir, strerror(errno));
		return -1;
	}
	int rc = -1;
	if (fstat(fd, &st)) {
		snprintf(msg, size, "cannot open external data '%.80s': %s", loc, strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(msg, size, "external data location '%.80s' is %s, not a regular file", loc,
			 file_kind(st.st_mode));
	} else if ((uint64_t)st.st_size < off || (uint64_t)st.st_size - off < want) {
		snprintf(msg, size, "external data '%.80s' is shorter than offset %llu + %zu bytes",
			 loc, (unsigned long long)off, want);
	} else {
		size_t got = 0;
		ssize_t r = 1;
		while (got < want && r > 0) {
			r = pread(fd, (char *)dst + got, want - got, (off_t)(off + got));
			if (r < 0 && errno == EINTR)
				r = 1;
			else if (r > 0)
				got += (size_t)r;
		}
		if (got == want)
			rc = 0;
		else
			snprintf(msg, size, "cannot read external data '%.80s': %s", loc,
				 r < 0 ? strerror(errno) : "the file became shorter");
	}
	close(fd);
	return rc;
}

/* ---- tensors ---------------------------------------------------------------- */

static int tensor(const Onnx__TensorProto *tp, const char *dir, HostTensor *out, char *msg,
		  size_t size, bool borrow);

int onnx_tensor(const Onnx__TensorProto *tp, const char *dir, HostTensor *out, char *msg,
		size_t size)
{
	return tensor(tp, dir, out, msg, size, false);
}

int onnx_tensor_borrow(const Onnx__TensorProto *tp, const char *dir, HostTensor *out,
		       char *msg, size_t size)
{
	return tensor(tp, dir, out, msg, size, true);
}

static int tensor(const Onnx__TensorProto *tp, const char *dir, HostTensor *out, char *msg,
		  size_t size, bool borrow)
{
	memset(out, 0, sizeof *out);
	int dt = onnx_dtype(tp->data_type);
	if (dt < 0) {
		snprintf(msg, size, "element type %s is not supported yet",
			 onnx_elem_name(tp->data_type));
		return -1;
	}
	if (tp->n_dims > IR_MAX_RANK) {
		snprintf(msg, size, "rank %zu exceeds the maximum of %d", tp->n_dims, IR_MAX_RANK);
		return -1;
	}
	int64_t n = 1;
	for (size_t i = 0; i < tp->n_dims; i++) {
		if (tp->dims[i] < 0) {
			snprintf(msg, size, "negative dim %lld", (long long)tp->dims[i]);
			return -1;
		}
		if (tp->dims[i] == 0 && tp->n_dims == 1) {
			n = 0;   /* an empty list (of axes, say): fine as a constant */
			continue;
		}
		if (tp->dims[i] == 0) {
			snprintf(msg, size, "empty tensors (a dim of 0) are not supported yet");
			return -1;
		}
		if (__builtin_mul_overflow(n, tp->dims[i], &n) || n > ((int64_t)1 << 34)) {
			snprintf(msg, size, "too many elements");
			return -1;
		}
	}
	DType t = (DType)dt;
	bool u16 = tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16,
	     u32 = tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32;
	if ((u16 || u32) && tp->has_data_location &&
	    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		snprintf(msg, size, "%s tensors in external data are not supported yet",
			 onnx_elem_name(tp->data_type));
		return -1;
	}
	/* es: the size of one stored element (raw data), which a widened type exceeds */
	size_t es = u16 ? 2 : u32 ? 4 : (size_t)ir_dtype_size(t), bytes = (size_t)n * es;
	bool external = tp->has_data_location &&
			tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	size_t have;
	if (external)
		have = (size_t)n;
	else if (tp->has_raw_data)
		have = tp->raw_data.len / es;
	else if (t == DT_F32)
		have = tp->n_float_data;
	else if (t == DT_F64)
		have = tp->n_double_data;
	else if (u32)
		have = tp->n_uint64_data;
	else if (t == DT_I64)
		have = tp->n_int64_data;
	else
		have = tp->n_int32_data;
	if ((!external && tp->has_raw_data && tp->raw_data.len != bytes) || have != (size_t)n) {
		snprintf(msg, size, "holds %zu elements, its dims need %lld",
			 tp->has_raw_data && !external ? tp->raw_data.len / es : have, (long long)n);
		return -1;
	}
	Diag d;
	int64_t dim[IR_MAX_RANK];
	for (size_t i = 0; i < tp->n_dims; i++)
		dim[i] = tp->dims[i];
	if (borrow && !external && tp->has_raw_data && !u16 && !u32 && bytes >= ONNX_ARENA_MIN) {
		out->dtype = t;
		out->rank = (int)tp->n_dims;
		memcpy(out->dim, dim, sizeof(int64_t) * tp->n_dims);
		out->n = n;
		out->data = tp->raw_data.data;
		return 1;
	}
	if (host_alloc(out, t, (int)tp->n_dims, dim, &d)) {
		snprintf(msg, size, "%s", d.msg);
		return -1;
	}
	if (external) {
		if (read_external(tp, dir, out->data, bytes, msg, size)) {
			host_free(out);
			return -1;
		}
		return 0;
	}
	if (tp->has_raw_data && (u16 || u32)) {
		const uint8_t *r = tp->raw_data.data;
		for (int64_t i = 0; i < n; i++) {
			uint16_t a;
			uint32_t b;
			if (u16) {
				memcpy(&a, r + 2 * i, 2);
				((int32_t *)out->data)[i] = a;
			} else {
				memcpy(&b, r + 4 * i, 4);
				((int64_t *)out->data)[i] = b;
			}
		}
		return 0;
	}
	if (tp->has_raw_data) {
		if (bytes)
			memcpy(out->data, tp->raw_data.data, bytes);
		return 0;
	}
	for (int64_t i = 0; i < n; i++) {
		switch (t) {
		case DT_F32: ((float *)out->data)[i] = tp->float_data[i]; break;
		case DT_F64: ((double *)out->data)[i] = tp->double_data[i]; break;
		case DT_I64:
			((int64_t *)out->data)[i] = u32 ? (int64_t)(uint32_t)tp->uint64_data[i]
						       : tp->int64_data[i];
			break;
		case DT_F16:
		case DT_BF16: ((uint16_t *)out->data)[i] = (uint16_t)tp->int32_data[i]; break;
		default:
			host_set_i64(out, i, u16 ? (uint16_t)tp->int32_data[i] : tp->int32_data[i]);
			break;
		}
	}
	return 0;
}
