#ifndef SG_HELPER_SINCOS  /* defined once when several sources share a translation unit */
#define SG_HELPER_SINCOS
/* sin x and cos x with one shared range reduction (C99 has no sincos), for |x| <= 1e5, with no calls and no
 * branches (so a loop over it vectorizes once inlined: sg_sincos_n).  x = j pi/2 + r, |r| <= pi/4, by
 * Cody-Waite with pi/2 split in four (the first three parts have 30 significant bits, so j * part is exact
 * for |j| < 2^23, and so is each subtraction near a multiple of pi/2); then minimax polynomials in z = r^2
 * (degree 13 for sin, 14 for cos: fdlibm's coefficients).  The rounding, the quadrant and its selection are done in floating
 * point: with R = 1.5 * 2^52, (y + R) - R is y rounded to the nearest integer (|y| < 2^51), and multiplying
 * by 0, 1 or -1 selects exactly.  Within 2 ulp of libm (tested). */
static inline void sg_sincos_reduced(double x, double *s, double *c)
{
    const double pio2_1 = 1.570796325802803;       /* pi/2 = pio2_1 + ... + pio2_4 (- 2e-44) */
    const double pio2_2 = 9.920935791635221e-10;
    const double pio2_3 = 5.17018297889025e-19;
    const double pio2_4 = 2.9038559739793605e-28;
    const double R = 6755399441055744.0;            /* 1.5 * 2^52 */
    const double j = (x * 0.6366197723675814 + R) - R;           /* nearest multiple of pi/2 */
    const double r = (((x - j * pio2_1) - j * pio2_2) - j * pio2_3) - j * pio2_4;   /* |r| <= pi/4 */
    const double z = r * r;
    /* minimax polynomials on |r| <= pi/4 (fdlibm's __kernel_sin and __kernel_cos coefficients; approximation
     * error below 2^-58): sin r = r + r^3 S(r^2), cos r = 1 - r^2/2 + r^4 C(r^2) */
    const double sr = r + r * z * (-1.66666666666666324348e-01 + z * (8.33333333332248946124e-03
        + z * (-1.98412698298579493134e-04 + z * (2.75573137070700676789e-06 + z * (-2.50507602534068634195e-08
        + z * 1.58969099521155010221e-10)))));
    const double cr = 1.0 - 0.5 * z + z * z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03
        + z * (2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07 + z * (2.08757232129817482790e-09
        + z * -1.13596475577881948265e-11)))));
    const double half = (j * 0.5 - 0.25 + R) - R;                  /* floor(j / 2) (never a tie) */
    const double odd = j - 2.0 * half;                              /* bit 0 of j */
    const double bit1 = half - 2.0 * ((j * 0.25 - 0.375 + R) - R);  /* bit 1 of j */
    /* quadrant j mod 4 = 0..3: (s, c) = (sr, cr), (cr, -sr), (-sr, -cr), (-cr, sr) */
    const double sign_s = 1.0 - 2.0 * bit1;
    const double sign_c = 1.0 - 2.0 * (bit1 + odd - 2.0 * bit1 * odd);
    *s = sign_s * (sr * (1.0 - odd) + cr * odd);
    *c = sign_c * (cr * (1.0 - odd) + sr * odd);
}

/* sin x and cos x for any x: larger |x|, inf and nan go to libm */
static void sg_sincos(double x, double *s, double *c)
{
    if (!(fabs(x) <= 1e5)) {
        *s = sin(x);
        *c = cos(x);
        return;
    }
    sg_sincos_reduced(x, s, c);
}
#endif /* SG_HELPER_SINCOS */
