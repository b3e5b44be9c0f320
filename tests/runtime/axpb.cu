// axpb.cu: the kernels of the hand-made runtime fixture (axpb.plan.json).
// t = a*b + s*c (64-bit index), then y = t*alpha + beta and m = (y > 1) as u8.
// Regenerate axpb.ptx with gen_ptx.sh.
extern "C" __global__ void fix_fma(const float *a, const float *b, const float *c,
				   double s, long long n, float *t)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		t[i] = a[i] * b[i] + (float)s * c[i];
}

extern "C" __global__ void fix_affine(const float *t, float alpha, float beta, int n,
				      float *y, unsigned char *m)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float v = t[i] * alpha + beta;
		y[i] = v;
		m[i] = v > 1.0f;
	}
}
