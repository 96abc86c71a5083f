/* Forward dynamics of the bundled 7-dof arm from a plain C program: no Python, only a C compiler and libm.
 *
 * Build the model's C first, then this program against it (see examples/c/Makefile):
 *     python -m symgen build                      # writes generated/arm7/ (examples/models/arm7.urdf)
 *     make -C examples/c                          # or, from the repository root:
 *     cc -std=c99 -O2 -I generated/arm7 -o arm7_fd examples/c/arm7_fd.c generated/arm7/arm7.c -lm
 *
 * Compile only the model's arm7.c: it #includes its hinge kernels (pin.c, locked.c), so compiling those
 * too would define their functions twice.
 *
 * Usage: arm7_fd [q1..q7 u1..u7 tau1..tau7]      (21 numbers; without them a built-in state)
 * Prints the accelerations Udot = FD(q, u, tau) and checks them in C with two identities:
 *     inverse dynamics:  ID(q, u, Udot) = tau
 *     mass matrix:       M(q) Udot + ID(q, u, 0) = tau      (ID at Udot = 0: Coriolis and gravity terms)
 * Exit status 0 when both relative residuals are at most 1e-10, 1 otherwise, 2 on bad input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#include "arm7.h"

/* Sizes of this model, from arm7.h: nQ = 7, nU = 7, 10 bodies.  The general entry points take
 * p = [g (3), tau or Udot (nU), f_ext (6 per body, [N; F] at the body origin in body axes, bodies in the
 * order listed at the top of arm7.c)], SG_ARM7_P_SIZE doubles. */
#define NQ SG_ARM7_NQ
#define NU SG_ARM7_NU
#define NP SG_ARM7_P_SIZE

/* largest |x_i|; NaN if any x_i is NaN (so that a NaN residual fails the check) */
static double max_abs(const double *x, int n)
{
    double m = 0.0;
    int i;
    for (i = 0; i < n; ++i) {
        if (isnan(x[i])) return x[i];
        if (fabs(x[i]) > m) m = fabs(x[i]);
    }
    return m;
}

int main(int argc, char **argv)
{
    /* the state: joint angles (rad), rates (rad/s), joint torques (N m) */
    double q[NQ] = {0.3, -0.7, 1.1, 0.4, -1.3, 0.9, 2.0};
    double u[NU] = {0.1, 0.2, -0.3, 0.4, -0.5, 0.6, -0.7};
    double tau[NU] = {1.0, -2.0, 0.5, 3.0, -0.25, 0.75, -1.5};
    const double g[3] = {0.0, 0.0, -9.81};   /* gravity, as in the model (manifest.json "gravity") */
    double p[NP] = {0.0};
    double udot[NU], tau_id[NU], bias[NU], zero[NU] = {0.0}, M[NU * NU];
    double r_id[NU], r_m[NU], res_id, res_m, scale;
    int i, j, status;

    if (argc == 1 + NQ + 2 * NU) {
        for (i = 0; i < NQ + 2 * NU; ++i) {
            char *end;
            double v = strtod(argv[1 + i], &end);
            if (*end != '\0' || end == argv[1 + i]) {
                fprintf(stderr, "arm7_fd: not a number: %s\n", argv[1 + i]);
                return 2;
            }
            if (i < NQ) q[i] = v;
            else if (i < NQ + NU) u[i - NQ] = v;
            else tau[i - NQ - NU] = v;
        }
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [q1..q%d u1..u%d tau1..tau%d]\n", argv[0], NQ, NU, NU);
        return 2;
    }

    /* forward dynamics (ATBI) through the general entry point: p = [g, tau, f_ext = 0] */
    for (i = 0; i < 3; ++i) p[i] = g[i];
    for (i = 0; i < NU; ++i) p[3 + i] = tau[i];
    status = sg_arm7_forward_dynamics(q, u, p, udot);
    if (status != 0) {
        fprintf(stderr, "arm7_fd: D of body %d is not positive definite\n", status - 1);
        return 1;
    }

    /* check 1: inverse dynamics (Newton-Euler) of Udot gives tau back; the one-state entry point takes
     * gravity and Udot as their own arrays (no external forces) */
    sg_arm7_inverse_dynamics_single(q, u, g, udot, tau_id);

    /* check 2: M(q) Udot + ID(q, u, 0) = tau, with the composite-body mass matrix (row-major nU x nU) */
    sg_arm7_mass_matrix(q, u, p, M);                /* u and p are not read */
    sg_arm7_inverse_dynamics_single(q, u, g, zero, bias);
    for (i = 0; i < NU; ++i) {
        double s = bias[i];
        for (j = 0; j < NU; ++j) s += M[i * NU + j] * udot[j];
        r_m[i] = s - tau[i];
        r_id[i] = tau_id[i] - tau[i];
    }
    scale = max_abs(tau, NU) > 1.0 ? max_abs(tau, NU) : 1.0;
    res_id = max_abs(r_id, NU) / scale;
    res_m = max_abs(r_m, NU) / scale;

    printf("udot");
    for (i = 0; i < NU; ++i) printf(" %.17g", udot[i]);
    printf("\n");
    printf("residual ID(q, u, udot) - tau: %.3g\n", res_id);
    printf("residual M udot + ID(q, u, 0) - tau: %.3g\n", res_m);
    if (!(res_id <= 1e-10 && res_m <= 1e-10)) {
        printf("FAIL: residual above 1e-10\n");
        return 1;
    }
    printf("OK\n");
    return 0;
}
