#ifndef SG_HELPER_SINCOS_N
#define SG_HELPER_SINCOS_N
/* sc[2i] = sin x[i], sc[2i+1] = cos x[i] for i < n: a model's hinge angles in one loop the compiler can
 * vectorize (sg_sincos_reduced has no calls and no branches), so the straight-line code after it holds no
 * call that would force its registers to memory.  |x| > 1e5, inf and nan are redone with libm by the
 * second loop.  Not inlined (where the compiler has the attribute): inlined into the long straight-line
 * functions it measured up to 20% slower there. */
#if defined(__GNUC__)
#define SG_NOINLINE __attribute__((noinline))
#else
#define SG_NOINLINE
#endif
SG_NOINLINE static void sg_sincos_n(int n, const double *x, double *sc)
{
    int i;
    for (i = 0; i < n; ++i)
        sg_sincos_reduced(x[i], sc + 2 * i, sc + 2 * i + 1);
    for (i = 0; i < n; ++i)
        if (!(fabs(x[i]) <= 1e5))
            sg_sincos(x[i], sc + 2 * i, sc + 2 * i + 1);
}
#endif /* SG_HELPER_SINCOS_N */
