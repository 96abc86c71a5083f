/* Shared by the plain-C benchmark programs (c_bench/sg_bench.c, mj_bench.c): a monotonic clock, reading
 * raw float64 inputs, and the median / minimum report.  Define BENCH_NAME (the program's name in error
 * messages) before including it. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* count zeroed doubles (at least one); exits on failure */
static double *bench_alloc(size_t count)
{
    double *p = calloc(count ? count : 1, sizeof(double));
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", BENCH_NAME);
        exit(2);
    }
    return p;
}

/* count native float64 values from DIR/FILE; exits on failure */
static double *bench_load(const char *dir, const char *file, size_t count)
{
    char path[4096];
    double *a = bench_alloc(count);
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    f = fopen(path, "rb");
    if (!f || fread(a, sizeof(double), count, f) != count) {
        fprintf(stderr, "%s: cannot read %zu doubles from %s\n", BENCH_NAME, count, path);
        exit(2);
    }
    fclose(f);
    return a;
}

static int bench_cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* "<name> <median> <min>" per row of times (rows x rounds, sorted in place) */
static void bench_report(const char *const *names, int rows, double *times, int rounds)
{
    int k;
    for (k = 0; k < rows; ++k) {
        double *t = times + (size_t)k * rounds;
        qsort(t, (size_t)rounds, sizeof(double), bench_cmp);
        printf("%s %.6f %.6f\n", names[k], 0.5 * (t[(rounds - 1) / 2] + t[rounds / 2]), t[0]);
    }
}
#endif /* BENCH_UTIL_H */
