/* y = N x for an n x m row-major N */
static void sg_matvec(int n, int m, const double *N, const double *x, double *y)
{
    int i, j;
    for (i = 0; i < n; ++i) {
        double v = 0.0;
        for (j = 0; j < m; ++j) v += N[i * m + j] * x[j];
        y[i] = v;
    }
}

/* V_B = phi^T(A, B) V_A for X_AB = (R, l):  w_B = R^T w_A,  v_B = R^T (v_A + w_A x l) */
static void sg_phiT(const double *R, const double *l, const double *V, double *out)
{
    double v[3];
    int i;
    v[0] = V[3] + V[1] * l[2] - V[2] * l[1];
    v[1] = V[4] + V[2] * l[0] - V[0] * l[2];
    v[2] = V[5] + V[0] * l[1] - V[1] * l[0];
    for (i = 0; i < 3; ++i) {
        out[i] = R[i] * V[0] + R[3 + i] * V[1] + R[6 + i] * V[2];
        out[3 + i] = R[i] * v[0] + R[3 + i] * v[1] + R[6 + i] * v[2];
    }
}

/* one body of the kinematics recursion:
 *   X_parent,body = onode * X_op * pnode^-1                     (pose)
 *   J_b    = phi^T(parent, b) J_parent + phi^T(pnode, b) H      (U columns uo.. of the hinge)
 *   Jdot_b = phi^T Jdot_parent - crm(V_rel) phi^T J_parent + phi^T(pnode, b) Hdot,  V_rel = phi^T(pnode, b) H u_h
 * body = [R 9, p 3, J 6 x nu, Jdot 6 x nu]; parent == 0 for the newtonian frame. */
static void sg_link_body(int nu, int nuh, int uo, const double *X, const double *H, const double *Hd,
                         const double *on, const double *pinv, const double *parent, const double *u, double *body)
{
    double Rop[9], Rpb[9], lpb[3], t[3], S[6], Vrel[6], col[6];
    double *R = body, *p = body + 9, *J = body + 12, *Jd = body + 12 + 6 * nu;
    int i, j, k;
    for (i = 0; i < 3; ++i)
        for (j = 0; j < 3; ++j) Rop[3 * i + j] = X[4 * i + j];
    /* R_pb = R_on Rop R_pinv,  l_pb = l_on + R_on (l_op + Rop l_pinv) */
    for (i = 0; i < 3; ++i) {
        t[i] = X[4 * i + 3];
        for (k = 0; k < 3; ++k) t[i] += Rop[3 * i + k] * pinv[9 + k];
    }
    for (i = 0; i < 3; ++i) {
        lpb[i] = on[9 + i];
        for (k = 0; k < 3; ++k) lpb[i] += on[3 * i + k] * t[k];
        for (j = 0; j < 3; ++j) {
            double v = 0.0;
            int a;
            for (k = 0; k < 3; ++k)
                for (a = 0; a < 3; ++a) v += on[3 * i + k] * Rop[3 * k + a] * pinv[3 * a + j];
            Rpb[3 * i + j] = v;
        }
    }
    if (parent) {
        const double *Rp = parent, *pp = parent + 9;
        for (i = 0; i < 3; ++i) {
            p[i] = pp[i];
            for (k = 0; k < 3; ++k) p[i] += Rp[3 * i + k] * lpb[k];
            for (j = 0; j < 3; ++j) {
                double v = 0.0;
                for (k = 0; k < 3; ++k) v += Rp[3 * i + k] * Rpb[3 * k + j];
                R[3 * i + j] = v;
            }
        }
    } else {
        for (i = 0; i < 9; ++i) R[i] = Rpb[i];
        for (i = 0; i < 3; ++i) p[i] = lpb[i];
    }
    /* hinge columns in the body frame, and the relative velocity they produce */
    for (i = 0; i < 6; ++i) Vrel[i] = 0.0;
    for (j = 0; j < 6 * nu; ++j) { J[j] = 0.0; Jd[j] = 0.0; }
    for (j = 0; j < nuh; ++j) {
        for (i = 0; i < 6; ++i) col[i] = H[i * nuh + j];
        sg_phiT(pinv, pinv + 9, col, S);
        for (i = 0; i < 6; ++i) { J[i * nu + uo + j] = S[i]; Vrel[i] += S[i] * u[uo + j]; }
        for (i = 0; i < 6; ++i) col[i] = Hd[i * nuh + j];
        sg_phiT(pinv, pinv + 9, col, S);
        for (i = 0; i < 6; ++i) Jd[i * nu + uo + j] = S[i];
    }
    if (!parent) return;
    for (j = 0; j < nu; ++j) {
        double a[6], b[6];
        for (i = 0; i < 6; ++i) col[i] = parent[12 + i * nu + j];
        sg_phiT(Rpb, lpb, col, a);                        /* phi^T J_parent */
        for (i = 0; i < 6; ++i) col[i] = parent[12 + 6 * nu + i * nu + j];
        sg_phiT(Rpb, lpb, col, b);                        /* phi^T Jdot_parent */
        /* - crm(Vrel) a = -[w x a_w; v x a_w + w x a_v] */
        b[0] -= Vrel[1] * a[2] - Vrel[2] * a[1];
        b[1] -= Vrel[2] * a[0] - Vrel[0] * a[2];
        b[2] -= Vrel[0] * a[1] - Vrel[1] * a[0];
        b[3] -= Vrel[4] * a[2] - Vrel[5] * a[1] + Vrel[1] * a[5] - Vrel[2] * a[4];
        b[4] -= Vrel[5] * a[0] - Vrel[3] * a[2] + Vrel[2] * a[3] - Vrel[0] * a[5];
        b[5] -= Vrel[3] * a[1] - Vrel[4] * a[0] + Vrel[0] * a[4] - Vrel[1] * a[3];
        for (i = 0; i < 6; ++i) { J[i * nu + j] += a[i]; Jd[i * nu + j] += b[i]; }
    }
}

/* pose only: X_newtonian,body = X_newtonian,parent * onode * X_op * pnode^-1; pose = [R 9, p 3] */
static void sg_link_pose(const double *X, const double *on, const double *pinv, const double *parent, double *pose)
{
    double A[9], t[3], Rpb[9], lpb[3];
    int i, j, k;
    for (i = 0; i < 3; ++i) {                         /* A = Rop pinv_R, t = l_op + Rop pinv_l */
        t[i] = X[4 * i + 3];
        for (j = 0; j < 3; ++j) {
            double v = 0.0;
            for (k = 0; k < 3; ++k) v += X[4 * i + k] * pinv[3 * k + j];
            A[3 * i + j] = v;
            t[i] += X[4 * i + j] * pinv[9 + j];
        }
    }
    for (i = 0; i < 3; ++i) {                         /* Rpb = on_R A, lpb = on_l + on_R t */
        lpb[i] = on[9 + i];
        for (j = 0; j < 3; ++j) {
            double v = 0.0;
            for (k = 0; k < 3; ++k) v += on[3 * i + k] * A[3 * k + j];
            Rpb[3 * i + j] = v;
            lpb[i] += on[3 * i + j] * t[j];
        }
    }
    if (!parent) {
        for (i = 0; i < 9; ++i) pose[i] = Rpb[i];
        for (i = 0; i < 3; ++i) pose[9 + i] = lpb[i];
        return;
    }
    for (i = 0; i < 3; ++i) {
        pose[9 + i] = parent[9 + i];
        for (j = 0; j < 3; ++j) {
            double v = 0.0;
            for (k = 0; k < 3; ++k) v += parent[3 * i + k] * Rpb[3 * k + j];
            pose[3 * i + j] = v;
            pose[9 + i] += parent[3 * i + j] * lpb[j];
        }
    }
}
