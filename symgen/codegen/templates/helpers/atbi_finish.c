#ifndef SG_HELPER_ATBI_FINISH  /* defined once when several hinge sources share a translation unit */
#define SG_HELPER_ATBI_FINISH
/* ATBI hinge step after D = H P H* and PH = P H* (6 x n) are known:
 * Cholesky D = L L^T, Dinv = L^-T L^-1, G = PH Dinv, P+ = P - G PH^T (= P - G H P, P symmetric).
 * out = [D (n x n), Dinv (n x n), G (6 x n), P+ (6 x 6)]; returns -1 if D is not positive definite. */
static int sg_atbi_finish(int n, const double *D, const double *PH, const double *P, double *out)
{
    double L[36], Linv[36];
    double *Dout = out, *Dinv = out + n * n, *G = out + 2 * n * n, *Pplus = out + 2 * n * n + 6 * n;
    int i, j, k;
    for (i = 0; i < n * n; ++i) Dout[i] = D[i];
    for (j = 0; j < n; ++j) {                      /* L (lower, row-major n x n) */
        double d = D[j * n + j];
        for (k = 0; k < j; ++k) d -= L[j * n + k] * L[j * n + k];
        if (!(d > 0.0)) return -1;                 /* also catches NaN */
        L[j * n + j] = sqrt(d);
        for (i = j + 1; i < n; ++i) {
            double v = D[i * n + j];
            for (k = 0; k < j; ++k) v -= L[i * n + k] * L[j * n + k];
            L[i * n + j] = v / L[j * n + j];
        }
    }
    for (j = 0; j < n; ++j) {                      /* Linv = L^-1 (lower) by forward substitution */
        for (i = 0; i < n; ++i) {
            double v = (i == j) ? 1.0 : 0.0;
            if (i < j) { Linv[i * n + j] = 0.0; continue; }
            for (k = j; k < i; ++k) v -= L[i * n + k] * Linv[k * n + j];
            Linv[i * n + j] = v / L[i * n + i];
        }
    }
    for (i = 0; i < n; ++i)                        /* Dinv = Linv^T Linv */
        for (j = 0; j < n; ++j) {
            double v = 0.0;
            for (k = (i > j ? i : j); k < n; ++k) v += Linv[k * n + i] * Linv[k * n + j];
            Dinv[i * n + j] = v;
        }
    for (i = 0; i < 6; ++i)                        /* G = PH Dinv */
        for (j = 0; j < n; ++j) {
            double v = 0.0;
            for (k = 0; k < n; ++k) v += PH[i * n + k] * Dinv[k * n + j];
            G[i * n + j] = v;
        }
    for (i = 0; i < 6; ++i)                        /* P+ = P - G PH^T */
        for (j = 0; j < 6; ++j) {
            double v = P[i <= j ? i * 6 + j : j * 6 + i];
            for (k = 0; k < n; ++k) v -= G[i * n + k] * PH[j * n + k];
            Pplus[i * 6 + j] = v;
        }
    return 0;
}
#endif /* SG_HELPER_ATBI_FINISH */
