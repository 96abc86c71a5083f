/* ---- closed chains: the small dense helpers of the loop constraints (symgen.algorithms.loops) ----
 * sg_lstsq6 and sg_cut_fit_q are left out where the model defines SG_LOOP_NO_LSTSQ6 / SG_LOOP_NO_CUT_FIT_Q (no loop
 * function calls them: cut joints without coordinates), else -Werror refuses an unused static function */

/* signature of every hinge kernel: (q, u, p, out) */
typedef void (*sg_hinge_kernel)(const double *q, const double *u, const double *p, double *out);

/* w = log(R), the rotation vector of a rotation matrix (row-major); accurate near 0 and near pi */
static void sg_rotation_log(const double *R, double *w)
{
    const double c = 0.5 * (R[0] + R[4] + R[8] - 1.0);               /* cos t */
    const double v0 = R[7] - R[5], v1 = R[2] - R[6], v2 = R[3] - R[1]; /* 2 sin(t) a */
    const double s2 = sqrt(v0 * v0 + v1 * v1 + v2 * v2);               /* 2 sin t */
    const double t = atan2(0.5 * s2, c);
    if (c > -0.9) {                                                   /* t < 2.69: from the skew part */
        const double f = s2 < 1e-8 ? 0.5 + s2 * s2 / 48.0 : t / s2;     /* t / (2 sin t) */
        w[0] = f * v0; w[1] = f * v1; w[2] = f * v2;
    } else {                                                          /* near pi: from R + R^T = 2c 1 + 2(1-c) a a^T */
        double a[3];
        int i = 0, j;
        if (R[4] > R[3 * i + i]) i = 1;
        if (R[8] > R[3 * i + i]) i = 2;
        a[i] = sqrt((R[4 * i] - c) / (1.0 - c));
        for (j = 0; j < 3; ++j)
            if (j != i) a[j] = (R[3 * i + j] + R[3 * j + i]) / (2.0 * (1.0 - c) * a[i]);
        if (a[0] * v0 + a[1] * v1 + a[2] * v2 < 0.0) {
            a[0] = -a[0]; a[1] = -a[1]; a[2] = -a[2];
        }
        w[0] = t * a[0]; w[1] = t * a[1]; w[2] = t * a[2];
    }
}

#ifndef SG_LOOP_NO_LSTSQ6
/* x = argmin |A x - b| for A 6 x n (row-major, n <= 6), by the normal equations A^T A x = A^T b and a
 * Cholesky factor; a direction that A does not span (pivot below 1e-14 of the largest) gets x = 0 */
static void sg_lstsq6(int n, const double *A, const double *b, double *x)
{
    double N[36], r[6], big = 0.0;
    int i, j, k, ok[6];
    for (i = 0; i < n; ++i) {
        r[i] = 0.0;
        for (k = 0; k < 6; ++k) r[i] += A[k * n + i] * b[k];
        for (j = 0; j <= i; ++j) {
            double s = 0.0;
            for (k = 0; k < 6; ++k) s += A[k * n + i] * A[k * n + j];
            N[i * 6 + j] = s;
        }
        if (N[i * 6 + i] > big) big = N[i * 6 + i];
    }
    for (j = 0; j < n; ++j) {                                         /* N = L L^T, L in the lower triangle */
        double d = N[j * 6 + j];
        for (k = 0; k < j; ++k) d -= N[j * 6 + k] * N[j * 6 + k];
        ok[j] = d > 1e-14 * big;
        N[j * 6 + j] = ok[j] ? sqrt(d) : 1.0;
        for (i = j + 1; i < n; ++i) {
            double s = N[i * 6 + j];
            for (k = 0; k < j; ++k) s -= N[i * 6 + k] * N[j * 6 + k];
            N[i * 6 + j] = ok[j] ? s / N[j * 6 + j] : 0.0;
        }
    }
    for (i = 0; i < n; ++i) {                                         /* L y = r */
        double s = r[i];
        for (k = 0; k < i; ++k) s -= N[i * 6 + k] * x[k];
        x[i] = ok[i] ? s / N[i * 6 + i] : 0.0;
    }
    for (i = n - 1; i >= 0; --i) {                                    /* L^T x = y */
        double s = x[i];
        for (k = i + 1; k < n; ++k) s -= N[k * 6 + i] * x[k];
        x[i] = ok[i] ? s / N[i * 6 + i] : 0.0;
    }
}
#endif

#ifndef SG_LOOP_NO_CUT_FIT_Q
/* The cut joint's Q that best places its pframe on the target: X = (R 9, l 3), the target's pose in the
 * source frame.  Gauss-Newton from q0 (the hinge's neutral Q) on the pframe error
 * e = [log(R_h^T R); R_h^T (l - l_h)] with the hinge's coord map: H du = e (least squares), Q += N du.
 * Stops when the step is below 1e-14 (or after 50 steps, for a target the hinge cannot reach exactly). */
static void sg_cut_fit_q(int nq, int nu, const double *q0, sg_hinge_kernel transform, sg_hinge_kernel coord_map,
                         sg_hinge_kernel qdot_map, sg_hinge_kernel sanitize, const double *X, double *q)
{
    double Xh[16], H[36], N[42], Rr[9], e[6], d[3], du[6], qs[7];
    int it, i, j, k;
    for (i = 0; i < nq; ++i) q[i] = q0[i];
    for (it = 0; it < 50; ++it) {
        double big = 0.0;
        transform(q, 0, 0, Xh);
        for (i = 0; i < 3; ++i)                                       /* R_h^T R */
            for (j = 0; j < 3; ++j)
                Rr[3 * i + j] = Xh[i] * X[j] + Xh[4 + i] * X[3 + j] + Xh[8 + i] * X[6 + j];
        sg_rotation_log(Rr, e);
        for (k = 0; k < 3; ++k) d[k] = X[9 + k] - Xh[4 * k + 3];
        for (i = 0; i < 3; ++i) e[3 + i] = Xh[i] * d[0] + Xh[4 + i] * d[1] + Xh[8 + i] * d[2];
        coord_map(q, 0, 0, H);
        sg_lstsq6(nu, H, e, du);
        qdot_map(q, 0, 0, N);
        for (i = 0; i < nq; ++i) {
            double s = 0.0;
            for (k = 0; k < nu; ++k) s += N[i * nu + k] * du[k];
            qs[i] = q[i] + s;
        }
        if (sanitize) sanitize(qs, 0, 0, q);
        else for (i = 0; i < nq; ++i) q[i] = qs[i];
        for (k = 0; k < nu; ++k) if (fabs(du[k]) > big) big = fabs(du[k]);
        if (big < 1e-14) break;
    }
}
#endif

/* x with A x = b for a symmetric positive semidefinite A (n x n, row-major; only its lower triangle is read,
 * and overwritten), by a Cholesky factorization with diagonal pivoting (LAPACK dpstrf's scheme, right-looking,
 * the lower triangle only): a pivot below tol times the largest diagonal entry ends it, and the rows left
 * (redundant constraints) get x = 0 (a basic solution: exact when b is consistent).  piv: n ints.
 * Returns the rank. */
static int sg_psd_solve(int n, double *A, const double *b, double tol, double *x, int *piv)
{
    int i, j, k, p, rank = 0;
    double dmax = 0.0, t, l[SG_LOOP_MAX_NC], y[SG_LOOP_MAX_NC];
    for (i = 0; i < n; ++i) {
        piv[i] = i;
        if (A[i * n + i] > dmax) dmax = A[i * n + i];
    }
    for (k = 0; k < n; ++k) {
        p = k;
        for (j = k + 1; j < n; ++j) if (A[j * n + j] > A[p * n + p]) p = j;
        if (!(A[p * n + p] > tol * dmax)) break;
        if (p != k) {                            /* symmetric swap of k and p (k < p) in the lower triangle */
            i = piv[k]; piv[k] = piv[p]; piv[p] = i;
            t = A[k * n + k]; A[k * n + k] = A[p * n + p]; A[p * n + p] = t;
            for (j = 0; j < k; ++j) { t = A[k * n + j]; A[k * n + j] = A[p * n + j]; A[p * n + j] = t; }
            for (j = k + 1; j < p; ++j) { t = A[j * n + k]; A[j * n + k] = A[p * n + j]; A[p * n + j] = t; }
            for (j = p + 1; j < n; ++j) { t = A[j * n + k]; A[j * n + k] = A[j * n + p]; A[j * n + p] = t; }
        }
        A[k * n + k] = t = sqrt(A[k * n + k]);
        for (i = k + 1; i < n; ++i) l[i] = A[i * n + k] /= t;   /* column k of L, kept contiguous in l */
        for (i = k + 1; i < n; ++i) {                            /* A[i][k+1..i] -= L[i][k] L[k+1..i][k] */
            const double li = l[i];
            double *Ai = A + i * n;
            for (j = k + 1; j <= i; ++j) Ai[j] -= li * l[j];
        }
        ++rank;
    }
    for (i = 0; i < n; ++i) x[i] = 0.0;
    for (i = 0; i < rank; ++i) {                                  /* L y = P b */
        double s = b[piv[i]];
        for (k = 0; k < i; ++k) s -= A[i * n + k] * y[k];
        y[i] = s / A[i * n + i];
    }
    for (i = rank - 1; i >= 0; --i) {                             /* L^T z = y, x = P^T z */
        double s = y[i];
        for (k = i + 1; k < rank; ++k) s -= A[k * n + i] * y[k];
        y[i] = s / A[i * n + i];
        x[piv[i]] = y[i];
    }
    return rank;
}
