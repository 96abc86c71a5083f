/* Plain-C timing of MuJoCo's mj_forward, mj_inverse and dense mass matrix on one model (no Python).
 *
 * Built and run by benchmarks/mujoco_peer.py against the libmujoco shipped in the `mujoco` wheel:
 *   cc -std=c11 -O2 -I<mujoco>/include mj_bench.c <mujoco>/libmujoco.so.X -Wl,-rpath,<mujoco> -lm
 *
 * Usage: mj_bench MODEL.mjb DIR N ROUNDS
 *   MODEL.mjb: the compiled model (mj_saveModel: exact doubles, unlike the 6-digit MJCF that mj_saveLastXML
 *              writes), contacts and constraints disabled, gravity set;
 *   reads  DIR/qpos.bin (N*nq), DIR/qvel.bin (N*nv), DIR/tau.bin (N*nv), DIR/qacc.bin (N*nv): raw float64 in
 *          MuJoCo's coordinate order;
 *   writes DIR/first.bin: state 0's qacc of mj_forward (nv), qfrc_inverse of mj_inverse (nv), the dense M of
 *          the "M" path (nv*nv) and of the "M_fwdpos" path (nv*nv);
 *   prints one line per timed path, "<path> <median> <min>" in microseconds per state over ROUNDS rounds
 *   (every path timed over the N states in each round, paths interleaved, after one warm-up pass):
 *     forward   copy qpos, qvel, qfrc_applied = tau; mj_forward
 *     inverse   copy qpos, qvel, qacc;                mj_inverse -> qfrc_inverse
 *     M         copy qpos; mj_kinematics, mj_comPos, mj_makeM (CRB), mj_fullM -> dense nv x nv
 *     M_fwdpos  copy qpos; mj_fwdPosition (everything position-dependent: also the LDL factor), mj_fullM
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mujoco/mujoco.h>
#define BENCH_NAME "mj_bench"
#include "bench_util.h"

#define NPATHS 4
static const char *const PATHS[NPATHS] = {"forward", "inverse", "M", "M_fwdpos"};

static double pass(int k, int n, const mjModel *m, mjData *d, const double *qpos, const double *qvel,
                   const double *tau, const double *qacc, double *M)
{
    const size_t nq = (size_t)m->nq, nv = (size_t)m->nv;
    const double t0 = now();
    int i;
    switch (k) {
    case 0:
        for (i = 0; i < n; ++i) {
            memcpy(d->qpos, qpos + i * nq, nq * sizeof(double));
            memcpy(d->qvel, qvel + i * nv, nv * sizeof(double));
            memcpy(d->qfrc_applied, tau + i * nv, nv * sizeof(double));
            mj_forward(m, d);
        }
        break;
    case 1:
        for (i = 0; i < n; ++i) {
            memcpy(d->qpos, qpos + i * nq, nq * sizeof(double));
            memcpy(d->qvel, qvel + i * nv, nv * sizeof(double));
            memcpy(d->qacc, qacc + i * nv, nv * sizeof(double));
            mj_inverse(m, d);
        }
        break;
    case 2:
        for (i = 0; i < n; ++i) {
            memcpy(d->qpos, qpos + i * nq, nq * sizeof(double));
            mj_kinematics(m, d);
            mj_comPos(m, d);
            mj_makeM(m, d);
            mj_fullM(m, d, M);
        }
        break;
    default:
        for (i = 0; i < n; ++i) {
            memcpy(d->qpos, qpos + i * nq, nq * sizeof(double));
            mj_fwdPosition(m, d);
            mj_fullM(m, d, M);
        }
        break;
    }
    return (now() - t0) / n * 1e6;
}

int main(int argc, char **argv)
{
    char path[4096];
    const char *dir;
    int n, rounds, k, r;
    size_t nq, nv;
    mjModel *m;
    mjData *d;
    double *qpos, *qvel, *tau, *qacc, *M, *times;
    FILE *f;

    if (argc != 5 || (n = atoi(argv[3])) < 1 || (rounds = atoi(argv[4])) < 1) {
        fprintf(stderr, "usage: %s MODEL.mjb DIR N ROUNDS\n", argv[0]);
        return 2;
    }
    if (mj_version() != mjVERSION_HEADER) {
        fprintf(stderr, "mj_bench: libmujoco %d does not match its headers %d\n", mj_version(), mjVERSION_HEADER);
        return 2;
    }
    m = mj_loadModel(argv[1], NULL);
    if (!m) {
        fprintf(stderr, "mj_bench: cannot load %s\n", argv[1]);
        return 2;
    }
    d = mj_makeData(m);
    dir = argv[2];
    nq = (size_t)m->nq;
    nv = (size_t)m->nv;
    qpos = bench_load(dir, "qpos.bin", n * nq);
    qvel = bench_load(dir, "qvel.bin", n * nv);
    tau = bench_load(dir, "tau.bin", n * nv);
    qacc = bench_load(dir, "qacc.bin", n * nv);
    M = bench_alloc(nv * nv);
    times = bench_alloc((size_t)NPATHS * rounds);

    /* state 0 of every path, for mujoco_peer.py's check */
    snprintf(path, sizeof path, "%s/first.bin", dir);
    f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "mj_bench: cannot write %s\n", path);
        return 2;
    }
    pass(0, 1, m, d, qpos, qvel, tau, qacc, M);
    fwrite(d->qacc, sizeof(double), nv, f);
    pass(1, 1, m, d, qpos, qvel, tau, qacc, M);
    fwrite(d->qfrc_inverse, sizeof(double), nv, f);
    pass(2, 1, m, d, qpos, qvel, tau, qacc, M);
    fwrite(M, sizeof(double), nv * nv, f);
    pass(3, 1, m, d, qpos, qvel, tau, qacc, M);
    if (fwrite(M, sizeof(double), nv * nv, f) != nv * nv) {
        fprintf(stderr, "mj_bench: cannot write %s\n", path);
        return 2;
    }
    fclose(f);

    for (k = 0; k < NPATHS; ++k) /* warm-up */
        pass(k, n, m, d, qpos, qvel, tau, qacc, M);
    for (r = 0; r < rounds; ++r)
        for (k = 0; k < NPATHS; ++k)
            times[k * rounds + r] = pass(k, n, m, d, qpos, qvel, tau, qacc, M);
    bench_report(PATHS, NPATHS, times, rounds);
    mj_deleteData(d);
    mj_deleteModel(m);
    return 0;
}
