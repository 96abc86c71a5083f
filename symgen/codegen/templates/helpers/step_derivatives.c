/* ---- step derivatives: A = dx'/dx and B = dx'/dT of one rollout step x' = step(x, T), x = (Q tangent, U)
 * (symgen.runtime.derivatives.step_derivatives).  The step is differentiated as the rollout takes it, in Q's own
 * coordinates (RK4's stages are off the unit sphere for a quaternion): with f(x) = (N(Q) U, Udot(Q, U)) and its
 * Jacobian J = [[dQdot/dQ, N], [dUdot/dQ, dUdot/dU]] from the model's functions, the stages' Jacobians are
 * chained (dk_s = J(x_s) dx_s); then the renormalization after the step (sanitize: its Jacobian by central
 * differences, step 1e-6, an error of about 1e-12 on a smooth map) and the tangents at both ends: the input's
 * columns along N(Q) e_j, the output's rows by N(Q')^+ = (N^T N)^-1 N^T, hinge by hinge (N is block diagonal). */

/* the model's functions the step takes */
typedef struct {
    int nq, nu, nh;           /* Q and U sizes, hinges */
    const int *blocks;        /* per hinge: Q offset, nQ, U offset, nU, 1 if it has a sanitize step */
    int (*fd)(const double *q, const double *u, const double *p, double *out);
    int (*fd_d)(const double *q, const double *u, const double *p, int tangent, double *out);
    void (*qdot_dq)(const double *q, const double *u, const double *p, double *out);
    void (*qdot_map)(const double *q, const double *u, const double *p, double *out);
    void (*sanitize)(const double *q, const double *u, const double *p, double *out);
} sg_step_model;

/* C (m x n) = alpha A (m x k) B (k x n) + beta C, row-major with leading dimensions lda, ldb, ldc */
static void sg_gemm(int m, int k, int n, double alpha, const double *A, int lda, const double *B, int ldb,
                    double beta, double *C, int ldc)
{
    int i, j, l;
    for (i = 0; i < m; ++i) {
        for (j = 0; j < n; ++j)
            C[i * ldc + j] = beta == 0.0 ? 0.0 : beta * C[i * ldc + j];  /* beta = 0: whatever C held */
        for (l = 0; l < k; ++l) {
            const double a = alpha * A[i * lda + l];
            if (a != 0.0)
                for (j = 0; j < n; ++j)
                    C[i * ldc + j] += a * B[l * ldb + j];
        }
    }
}

/* at x = (q, u): k = f(x) (n), J (n x n), JT = d f / d T (n x nu: [0; M^-1]); returns FD's status */
static int sg_step_f(const sg_step_model *m, const double *q, const double *u, const double *p, double *k,
                     double *J, double *JT, double *w)
{
    const int nq = m->nq, nu = m->nu, n = nq + nu;
    double *d = w, *N = d + nu * (nq + 2 * nu), *Qq = N + nq * nu;
    int i, j, s = m->fd(q, u, p, k + nq);
    if (s) return s;
    s = m->fd_d(q, u, p, 0, d);  /* dUdot/dQ (nu x nq), dUdot/dU, M^-1 */
    if (s) return s;
    m->qdot_map(q, u, p, N);
    m->qdot_dq(q, u, p, Qq);
    for (i = 0; i < nq; ++i) {
        k[i] = 0.0;
        for (j = 0; j < nu; ++j) k[i] += N[i * nu + j] * u[j];  /* Qdot = N U */
        for (j = 0; j < nq; ++j) J[i * n + j] = Qq[i * nq + j];
        for (j = 0; j < nu; ++j) { J[i * n + nq + j] = N[i * nu + j]; JT[i * nu + j] = 0.0; }
    }
    for (i = 0; i < nu; ++i) {
        for (j = 0; j < nq; ++j) J[(nq + i) * n + j] = d[i * nq + j];
        for (j = 0; j < nu; ++j) {
            J[(nq + i) * n + nq + j] = d[nu * nq + i * nu + j];
            JT[(nq + i) * nu + j] = d[nu * nq + nu * nu + i * nu + j];
        }
    }
    return 0;
}

/* doubles of work sg_step_derivatives needs */
static int sg_step_work_size(int nq, int nu)
{
    const int n = nq + nu;
    return 5 * n * n + 4 * n * nu + 4 * n + nu * (nq + 2 * nu) + 3 * nq * nq + 4 * nq * nu + 2 * nu * nu + 8;
}

/* A (2nu x 2nu), B (2nu x nu) of one step of size h, method 0: RK4, 1: semi-implicit Euler; p: FD's (T held over
 * the step); work: sg_step_work_size(nq, nu) doubles.  Returns 0, or FD's status at a stage. */
static int sg_step_derivatives(const sg_step_model *m, const double *q, const double *u, const double *p, double h,
                               int method, double *work, double *A, double *B)
{
    const int nq = m->nq, nu = m->nu, n = nq + nu;
    double *X1 = work, *D1 = X1 + n * n, *J = D1 + n * n, *DX = J + n * n, *DK = DX + n * n;  /* n x n */
    double *T1 = DK + n * n, *JT = T1 + n * nu, *DT = JT + n * nu, *DKT = DT + n * nu;          /* n x nu */
    double *x = DKT + n * nu, *xs = x + n, *k = xs + n, *x1 = k + n;                           /* n */
    double *S = x1 + n, *L = S + nq * nq, *Nin = L + nq * nq, *Nout = Nin + nq * nu, *G = Nout + nq * nu;
    double *fw = G + nu * nu + nq * nu;   /* sg_step_f's own: nu (nq + 2 nu) + nq nu + nq nq */
    int i, j, c, s;
    for (i = 0; i < nq; ++i) x[i] = q[i];
    for (i = 0; i < nu; ++i) x[nq + i] = u[i];
    for (i = 0; i < n * n; ++i) D1[i] = 0.0;
    for (i = 0; i < n * nu; ++i) T1[i] = 0.0;
    if (method == 0) {                                   /* RK4 */
        static const double cs[4] = {0.5, 0.5, 1.0, 0.0}, ws[4] = {1.0, 2.0, 2.0, 1.0};
        for (i = 0; i < n; ++i) { xs[i] = x[i]; x1[i] = x[i]; }
        for (i = 0; i < n * n; ++i) DX[i] = (i % (n + 1) == 0) ? 1.0 : 0.0;  /* dx_1 / dx = 1 */
        for (i = 0; i < n * nu; ++i) DT[i] = 0.0;
        for (c = 0; c < 4; ++c) {
            s = sg_step_f(m, xs, xs + nq, p, k, J, JT, fw);
            if (s) return s;
            for (i = 0; i < n * nu; ++i) DKT[i] = JT[i];
            sg_gemm(n, n, n, 1.0, J, n, DX, n, 0.0, DK, n);      /* dk = J dx_s */
            sg_gemm(n, n, nu, 1.0, J, n, DT, nu, 1.0, DKT, nu);  /* dk/dT = J dx_s/dT + [0; M^-1] */
            for (i = 0; i < n; ++i) x1[i] += h / 6.0 * ws[c] * k[i];
            for (i = 0; i < n * n; ++i) D1[i] += h / 6.0 * ws[c] * DK[i];
            for (i = 0; i < n * nu; ++i) T1[i] += h / 6.0 * ws[c] * DKT[i];
            if (c < 3) {                                    /* the next stage at x + c h k */
                for (i = 0; i < n; ++i) xs[i] = x[i] + cs[c] * h * k[i];
                for (i = 0; i < n * n; ++i) DX[i] = ((i % (n + 1) == 0) ? 1.0 : 0.0) + cs[c] * h * DK[i];
                for (i = 0; i < n * nu; ++i) DT[i] = cs[c] * h * DKT[i];
            }
        }
        for (i = 0; i < n; ++i) D1[i * n + i] += 1.0;
    } else {                                              /* semi-implicit Euler: U1 = U + h Udot, Q1 = Q + h N(Q) U1 */
        double *d = fw, *N = Nin, *Qq = L;
        s = m->fd(q, u, p, k);
        if (s) return s;
        s = m->fd_d(q, u, p, 0, d);
        if (s) return s;
        for (i = 0; i < nu; ++i) x1[nq + i] = u[i] + h * k[i];
        m->qdot_map(q, u, p, N);
        m->qdot_dq(q, x1 + nq, p, Qq);
        for (i = 0; i < nu; ++i) {                        /* dU1 = [h dUdot/dQ, 1 + h dUdot/dU], dU1/dT = h M^-1 */
            for (j = 0; j < nq; ++j) D1[(nq + i) * n + j] = h * d[i * nq + j];
            for (j = 0; j < nu; ++j) {
                D1[(nq + i) * n + nq + j] = (i == j ? 1.0 : 0.0) + h * d[nu * nq + i * nu + j];
                T1[(nq + i) * nu + j] = h * d[nu * nq + nu * nu + i * nu + j];
            }
        }
        for (i = 0; i < nq; ++i) {                        /* dQ1 = [1 + h dQdot/dQ (at U1), 0] + h N dU1 */
            x1[i] = q[i];
            for (j = 0; j < nu; ++j) x1[i] += h * N[i * nu + j] * x1[nq + j];
            for (j = 0; j < nq; ++j) D1[i * n + j] = (i == j ? 1.0 : 0.0) + h * Qq[i * nq + j];
        }
        sg_gemm(nq, nu, n, h, N, nu, D1 + nq * n, n, 1.0, D1, n);
        sg_gemm(nq, nu, nu, h, N, nu, T1 + nq * nu, nu, 0.0, T1, nu);
    }
    /* S = d sanitize / dQ at Q1: 1 on the hinges without a sanitize step, central differences on the others'
     * coordinates (sanitize acts hinge by hinge) */
    for (i = 0; i < nq * nq; ++i) S[i] = (i % (nq + 1) == 0) ? 1.0 : 0.0;
    for (c = 0; c < m->nh; ++c) {
        const int q0 = m->blocks[5 * c], hq = m->blocks[5 * c + 1];
        if (!m->blocks[5 * c + 4]) continue;
        for (j = q0; j < q0 + hq; ++j) {
            const double eps = 1e-6, keep = x1[j];
            x1[j] = keep + eps;
            m->sanitize(x1, x1 + nq, p, xs);
            x1[j] = keep - eps;
            m->sanitize(x1, x1 + nq, p, k);
            x1[j] = keep;
            for (i = q0; i < q0 + hq; ++i) S[i * nq + j] = (xs[i] - k[i]) / (2.0 * eps);
        }
    }
    m->sanitize(x1, x1 + nq, p, xs);                      /* Q' */
    if (method == 0)
        m->qdot_map(q, u, p, Nin);                        /* (Euler's is there) */
    m->qdot_map(xs, u, p, Nout);
    /* G = N(Q')^+ S (nu x nq): hinge by hinge, (N_h^T N_h)^-1 N_h^T by Gauss-Jordan on the small N_h^T N_h */
    for (i = 0; i < nu * nq; ++i) G[i] = 0.0;
    for (c = 0; c < m->nh; ++c) {
        const int q0 = m->blocks[5 * c], hq = m->blocks[5 * c + 1], u0 = m->blocks[5 * c + 2], hu = m->blocks[5 * c + 3];
        double NtN[SG_STEP_MAX_HU * SG_STEP_MAX_HU], Pinv[2 * SG_STEP_MAX_HU * SG_STEP_MAX_HU];
        int r, t;
        if (!hu) continue;
        for (i = 0; i < hu; ++i)
            for (j = 0; j < hu; ++j) {
                NtN[i * hu + j] = 0.0;
                for (t = 0; t < hq; ++t) NtN[i * hu + j] += Nout[(q0 + t) * nu + u0 + i] * Nout[(q0 + t) * nu + u0 + j];
            }
        for (i = 0; i < hu; ++i)                          /* [NtN | 1] -> [1 | NtN^-1] */
            for (j = 0; j < 2 * hu; ++j) Pinv[i * 2 * hu + j] = j < hu ? NtN[i * hu + j] : (j - hu == i ? 1.0 : 0.0);
        for (r = 0; r < hu; ++r) {
            const double piv = Pinv[r * 2 * hu + r];
            for (j = 0; j < 2 * hu; ++j) Pinv[r * 2 * hu + j] /= piv;
            for (i = 0; i < hu; ++i)
                if (i != r) {
                    const double f = Pinv[i * 2 * hu + r];
                    for (j = 0; j < 2 * hu; ++j) Pinv[i * 2 * hu + j] -= f * Pinv[r * 2 * hu + j];
                }
        }
        for (i = 0; i < hu; ++i)                          /* G rows of this hinge: NtN^-1 N_h^T S */
            for (t = 0; t < hq; ++t) {
                double a = 0.0;
                for (r = 0; r < hu; ++r) a += Pinv[i * 2 * hu + hu + r] * Nout[(q0 + t) * nu + u0 + r];
                for (j = 0; j < nq; ++j) G[(u0 + i) * nq + j] += a * S[(q0 + t) * nq + j];
            }
    }
    /* A = [[G D_qq Nin, G D_qu], [D_uq Nin, D_uu]], B = [G T_q; T_u] */
    for (i = 0; i < 2 * nu * 2 * nu; ++i) A[i] = 0.0;
    sg_gemm(nu, nq, nq, 1.0, G, nq, D1, n, 0.0, L, nq);                  /* L = G D_qq (nu x nq) */
    sg_gemm(nu, nq, nu, 1.0, L, nq, Nin, nu, 0.0, A, 2 * nu);
    sg_gemm(nu, nq, nu, 1.0, G, nq, D1 + nq, n, 0.0, A + nu, 2 * nu);
    sg_gemm(nu, nq, nu, 1.0, D1 + nq * n, n, Nin, nu, 0.0, A + nu * 2 * nu, 2 * nu);
    for (i = 0; i < nu; ++i)
        for (j = 0; j < nu; ++j) A[(nu + i) * 2 * nu + nu + j] = D1[(nq + i) * n + nq + j];
    sg_gemm(nu, nq, nu, 1.0, G, nq, T1, nu, 0.0, B, nu);
    for (i = 0; i < nu * nu; ++i) B[nu * nu + i] = T1[nq * nu + i];
    return 0;
}
