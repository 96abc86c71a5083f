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

/* where direction d's column starts in out = [d/dQ (nu x ndq), d/dU (nu x nu), third (nu x nu)] (each row-major),
 * and the row stride there */
static inline double *sg_deriv_column(int nu, int ndq, int d, double *out, int *ncol)
{
    if (d >= ndq + nu) {
        *ncol = nu;
        return out + nu * ndq + nu * nu + (d - ndq - nu);
    }
    if (d >= ndq) {
        *ncol = nu;
        return out + nu * ndq + (d - ndq);
    }
    *ncol = ndq;
    return out + d;
}

/* direction d's derivatives of the nu outputs (row) into their column of out */
static inline void sg_deriv_scatter(int nu, int ndq, int d, const double *row, double *out)
{
    int c, ncol;
    double *m = sg_deriv_column(nu, ndq, d, out, &ncol);
    for (c = 0; c < nu; ++c)
        m[c * ncol] = row[c];  /* d output c / d direction */
}

/* entry c of direction d's column of out */
static inline double sg_deriv_get(int nu, int ndq, int d, int c, double *out)
{
    int ncol;
    return sg_deriv_column(nu, ndq, d, out, &ncol)[c * ncol];
}
#else
#define SG_DERIVS 0
#endif
