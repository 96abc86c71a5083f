/* ---- the operational-space compliance Upsilon(k) = J_k M^-1 J_k^T of every body frame, by Jain's base-to-tip
 * recursion on the ATBI factorization (soa_atbi_notes 3.6), without forming M^-1:
 *   Upsilon(k) = psi^T Upsilon(parent) psi + H Dinv H^T,   Upsilon(newtonian) = 0,
 * psi = phi(parent, k) tauper, H the body's coord map (6 x nU_h), Dinv = D^-1; mats: atbi_matrices' blocks of
 * `block` doubles per body, Dinv, psi and H at offsets dinv, psi0, h0 of each.  out: 36 per body, row-major. */
static void sg_upsilon_pass(int nb, const int *parent, const int *nuh, const double *mats, int block, int dinv,
                            int psi0, int h0, double *out)
{
    int k, i, j, m, c, d;
    for (k = 0; k < nb; ++k) {
        const double *mk = mats + block * k;
        const double *Dinv = mk + dinv, *psi = mk + psi0, *H = mk + h0;
        const int n = nuh[k];
        double *Y = out + 36 * k, YP[36];
        for (i = 0; i < 36; ++i) Y[i] = 0.0;
        if (parent[k] >= 0) {
            const double *Yp = out + 36 * parent[k];
            for (i = 0; i < 6; ++i)             /* YP = Upsilon(parent) psi */
                for (j = 0; j < 6; ++j) {
                    double v = 0.0;
                    for (m = 0; m < 6; ++m) v += Yp[6 * i + m] * psi[6 * m + j];
                    YP[6 * i + j] = v;
                }
            for (i = 0; i < 6; ++i)             /* Y = psi^T YP */
                for (j = 0; j < 6; ++j) {
                    double v = 0.0;
                    for (m = 0; m < 6; ++m) v += psi[6 * m + i] * YP[6 * m + j];
                    Y[6 * i + j] = v;
                }
        }
        for (i = 0; i < 6; ++i)                 /* Y += H Dinv H^T */
            for (j = 0; j < 6; ++j) {
                double v = 0.0;
                for (c = 0; c < n; ++c)
                    for (d = 0; d < n; ++d) v += H[n * i + c] * Dinv[n * c + d] * H[n * j + d];
                Y[6 * i + j] += v;
            }
    }
}
