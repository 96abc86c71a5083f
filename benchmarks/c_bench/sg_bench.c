/* Plain-C timing of one symgen model's generated kernels (no Python): forward dynamics, inverse dynamics,
 * mass matrix and the poses of all bodies, one call per state; and FD, ID and M through their _batch functions,
 * one call for the N states (fd_batch, id_batch, M_batch: the lane form where the model has one).
 *
 * Built by benchmarks/c_bench/run.py against one generated model (only the model's <name>.c is compiled
 * with it; that file #includes its hinge kernels):
 *   cc -std=c99 -O3 -DSG_NAME=<name> -DSG_HEADER='"<name>.h"' -DSG_NQ=.. -DSG_NU=.. -DSG_NB=.. [-DSG_FD_INT]
 *      -I<sources> sg_bench.c <sources>/<name>.c -lm
 *
 * Usage: sg_bench DIR N ROUNDS
 *   reads  DIR/q.bin (N*nQ), DIR/u.bin (N*nU), DIR/t.bin (N*nU), DIR/g.bin (3): raw native float64;
 *   writes DIR/first.bin: state 0's FD (nU), ID (nU), M (nU*nU) and poses (12*nb);
 *   prints one line per kernel, "<kernel> <median> <min>" in microseconds per state over ROUNDS rounds
 *   (each round times every kernel over the N states, kernels interleaved, after one warm-up pass).
 * t.bin is both the generalized force of FD and the Udot of ID (as in benchmarks/vs_pinocchio.py).
 * p = [g (3), T or Udot (nU), f_ext = 0 (6*nb)] is one buffer; T_i is copied into it inside the timed loop.
 * The batches read an (N, NP) block of p filled before the timing (as a C caller of a batch holds them).
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include SG_HEADER
#define BENCH_NAME "sg_bench"
#include "../bench_util.h"

#define SG_CAT_(a, b, c) a##b##c
#define SG_CAT(a, b, c) SG_CAT_(a, b, c)
#define SG_FN(kernel) SG_CAT(sg_, SG_NAME, kernel)

#define NQ (SG_NQ)
#define NU (SG_NU)
#define NB (SG_NB)
#define NP (3 + NU + 6 * NB)
#define NOUT (NU * NU > 12 * NB ? NU * NU : 12 * NB)
#define NKERNELS 7
#define NCHECKED 4  /* state 0 of the one-state kernels goes to first.bin */

static const char *const KERNELS[NKERNELS] = {"fd", "id", "M", "poses", "fd_batch", "id_batch", "M_batch"};
static double *PN, *OUTN;  /* the batches' p (N x NP) and out (N x nU^2) */

/* One pass of kernel k over the n states; returns microseconds per state. */
static double pass(int k, int n, const double *Q, const double *U, const double *T, double *p, double *out,
                   long *bad)
{
    const double t0 = now();
    int i;
    switch (k) {
    case 0:
        for (i = 0; i < n; ++i) {
            memcpy(p + 3, T + (size_t)i * NU, NU * sizeof(double));
#ifdef SG_FD_INT
            *bad += SG_FN(_forward_dynamics)(Q + (size_t)i * NQ, U + (size_t)i * NU, p, out) != 0;
#else
            SG_FN(_forward_dynamics)(Q + (size_t)i * NQ, U + (size_t)i * NU, p, out);
#endif
        }
        break;
    case 1:
        for (i = 0; i < n; ++i) {
            memcpy(p + 3, T + (size_t)i * NU, NU * sizeof(double));
            SG_FN(_inverse_dynamics)(Q + (size_t)i * NQ, U + (size_t)i * NU, p, out);
        }
        break;
    case 2:
        for (i = 0; i < n; ++i)
            SG_FN(_mass_matrix)(Q + (size_t)i * NQ, U + (size_t)i * NU, p, out);
        break;
    case 3:
        for (i = 0; i < n; ++i)
            SG_FN(_poses)(Q + (size_t)i * NQ, U + (size_t)i * NU, p, out);
        break;
    case 4:
        *bad += SG_FN(_forward_dynamics_batch)(n, Q, U, PN, OUTN) != 0;
        break;
    case 5:
        SG_FN(_inverse_dynamics_batch)(n, Q, U, PN, OUTN);
        break;
    default:
        SG_FN(_mass_matrix_batch)(n, Q, U, PN, OUTN);
        break;
    }
    return (now() - t0) / n * 1e6;
}

int main(int argc, char **argv)
{
    const char *dir;
    int n, rounds, k, r;
    double *Q, *U, *T, *g, *p, *out, *times;
    long bad = 0;
    FILE *f;
    char path[4096];

    if (argc != 4 || (n = atoi(argv[2])) < 1 || (rounds = atoi(argv[3])) < 1) {
        fprintf(stderr, "usage: %s DIR N ROUNDS\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    Q = bench_load(dir, "q.bin", (size_t)n * NQ);
    U = bench_load(dir, "u.bin", (size_t)n * NU);
    T = bench_load(dir, "t.bin", (size_t)n * NU);
    g = bench_load(dir, "g.bin", 3);
    p = bench_alloc(NP);
    out = bench_alloc(NOUT);
    times = bench_alloc((size_t)NKERNELS * rounds);
    memcpy(p, g, 3 * sizeof(double));
    PN = bench_alloc((size_t)n * NP);
    OUTN = bench_alloc((size_t)n * NU * NU);
    for (k = 0; k < n; ++k) {
        memcpy(PN + (size_t)k * NP, p, NP * sizeof(double));
        memcpy(PN + (size_t)k * NP + 3, T + (size_t)k * NU, NU * sizeof(double));
    }

    /* state 0 of every kernel, for run.py's correctness check */
    snprintf(path, sizeof path, "%s/first.bin", dir);
    f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "sg_bench: cannot write %s\n", path);
        return 2;
    }
    for (k = 0; k < NCHECKED; ++k) {
        static const size_t size[NCHECKED] = {NU, NU, NU * NU, 12 * NB};
        pass(k, 1, Q, U, T, p, out, &bad);
        if (fwrite(out, sizeof(double), size[k], f) != size[k]) {
            fprintf(stderr, "sg_bench: cannot write %s\n", path);
            return 2;
        }
    }
    fclose(f);

    for (k = 0; k < NKERNELS; ++k) /* warm-up */
        pass(k, n, Q, U, T, p, out, &bad);
    for (r = 0; r < rounds; ++r)
        for (k = 0; k < NKERNELS; ++k)
            times[k * rounds + r] = pass(k, n, Q, U, T, p, out, &bad);
    if (bad) {
        fprintf(stderr, "sg_bench: forward dynamics returned a nonzero status %ld times\n", bad);
        return 3;
    }
    bench_report(KERNELS, NKERNELS, times, rounds);
    return 0;
}
