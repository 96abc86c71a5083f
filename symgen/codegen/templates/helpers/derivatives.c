/* ---- derivatives: the vectors of directions that the derivative functions' tangents are (symgen.ir.dual), and
 * where a block's rows go.  C's vector extensions (GCC, clang); elsewhere the derivative functions return -1.
 * Each derivative function is compiled twice: for AVX-512 (8 directions per vector, used where the CPU has it)
 * and for the baseline ISA (2 directions per vector: one SSE2 or NEON register).  The statements name the vector
 * type sg_dv and its width SG_DW, defined before each copy. */
#if defined(__GNUC__)
#define SG_DERIVS 1
typedef double sg_dv2 __attribute__((vector_size(2 * sizeof(double))));
#if defined(__x86_64__)
#define SG_DERIVS_AVX512 1
typedef double sg_dv8 __attribute__((vector_size(8 * sizeof(double))));
#else
#define SG_DERIVS_AVX512 0
#endif

/* direction d's derivatives of the nu outputs (row) into out = [d/dQ (nu x ndq), d/dU (nu x nu), third (nu x nu)],
 * each row-major: column d of the block d falls in */
static inline void sg_deriv_scatter(int nu, int ndq, int d, const double *row, double *out)
{
    int c, ncol = ndq, col = d;
    double *m = out;
    if (d >= ndq + nu) {
        m = out + nu * ndq + nu * nu;
        ncol = nu;
        col = d - ndq - nu;
    } else if (d >= ndq) {
        m = out + nu * ndq;
        ncol = nu;
        col = d - ndq;
    }
    for (c = 0; c < nu; ++c)
        m[c * ncol + col] = row[c];  /* d output c / d direction */
}
#else
#define SG_DERIVS 0
#endif
