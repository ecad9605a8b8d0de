/* A libFuzzer target for the C entry points that take sizes and scales from the Python
 * layer: the secure sparse-vector stream (grid, threshold, inversion parameter, noise
 * scales, values), the grid release (exponent k), the secure exponential mechanism and
 * peeling top-k (m, k, t0, t1, gamma = g/2^s) and the discrete Laplace sampler (s_num/s_den).
 *
 * The Python layer validates every one of these before calling C; this target checks that
 * the C core itself never reads or writes out of bounds, never hits undefined behaviour and
 * always returns a status, whatever the bytes (docs/security-model.md, "Sanitizers").
 *
 * With clang:  clang -g -O1 -fsanitize=fuzzer,address,undefined -Icsrc/include \
 *                  fuzz/fuzz_params.c csrc/*.c -lm -o fuzz_params && ./fuzz_params -max_total_time=60
 * With gcc (no libFuzzer), a standalone driver feeding pseudo-random inputs:
 *              gcc -g -O1 -DDPF_FUZZ_STANDALONE -fsanitize=address,undefined \
 *                  -fno-sanitize-recover=all -Icsrc/include fuzz/fuzz_params.c csrc/*.c -lm \
 *                  -o fuzz_params && ./fuzz_params 20000
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dpfast/chacha.h"
#include "dpfast/discrete.h"
#include "dpfast/grid.h"
#include "dpfast/rng.h"
#include "dpfast/selection.h"
#include "dpfast/sparse.h"
#include "dpfast/status.h"

typedef struct {
    const uint8_t *p;
    size_t n;
} input_t;

static uint64_t take64(input_t *in)
{
    uint64_t v = 0;
    size_t i;
    for (i = 0; i < 8 && in->n; i++, in->p++, in->n--) v |= (uint64_t)in->p[0] << (8 * i);
    return v;
}

static double take_double(input_t *in)
{
    uint64_t bits = take64(in);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static dpf_chacha_t *cc;

static void fuzz_svt(input_t *in, dpf_rng_t *r)
{
    dpf_svt_t *s = (dpf_svt_t *)calloc(1, sizeof *s);
    double v[70], grid = take_double(in), thr = take_double(in), inv_l = take_double(in);
    uint64_t tn = take64(in) | 1, td = take64(in) | 1, vn = take64(in) | 1,
             vd = take64(in) | 1;
    int64_t cutoff = (int64_t)(take64(in) & 7) + 1;
    size_t n = (size_t)(take64(in) % 70), i, bad = 0, done = 0;
    int which = -1;
    uint8_t top[70];
    double val[70];
    if (!s) return;
    for (i = 0; i < n; i++) v[i] = take_double(in);
    if (dpf_svt_init_secure(s, cutoff, (int)(tn & 2), grid, thr, inv_l, tn >> 1, td >> 1,
                            vn >> 1, vd >> 1, 0) == DPF_OK &&
        dpf_svt_start(s, r) == DPF_OK &&
        dpf_svt_validate(s, v, NULL, 0, n, &bad, &which) == DPF_OK)
        (void)dpf_svt_feed(s, r, v, NULL, 0, n, top, val, &done);
    dpf_svt_wipe(s);
    free(s);
}

static void fuzz_grid(input_t *in)
{
    double x[4], out[4];
    int64_t z[4];
    int k = (int)(take64(in) % 2001) - 1000, i;   /* the documented range of k */
    for (i = 0; i < 4; i++) {
        x[i] = take_double(in);
        if (!(x[i] - x[i] == 0.0)) x[i] = 0.0;    /* x must be finite (documented) */
        z[i] = (int64_t)take64(in);
    }
    (void)dpf_grid_add(x, z, out, 4, k);
}

static void fuzz_selection(input_t *in, dpf_rng_t *r)
{
    size_t m = (size_t)(take64(in) % 40) + 1, i, out = 0;
    size_t k = (size_t)(take64(in) % (m + 1));
    int kind = (int)(take64(in) & 1) ? DPF_SCORES_I64 : DPF_SCORES_F64;
    union {
        double d[40];
        int64_t i[40];
    } u;
    uint8_t layer[40];
    int64_t picks[40];
    dpf_sel_grid_t g;
    g.inv_grid = 1.0 / 4096.0;
    g.g = take64(in) >> 1;
    g.s = (uint32_t)(take64(in) % 64);
    for (i = 0; i < m; i++) {
        u.i[i] = (int64_t)take64(in);
        if (kind == DPF_SCORES_F64 && !(u.d[i] - u.d[i] == 0.0)) u.d[i] = 0.0;
    }
    memset(layer, 0, sizeof layer);
    (void)dpf_em_secure(r, &u, kind, m, &g, &out);
    (void)dpf_topk_secure_rounds(r, &u, kind, m, &g, layer, 0, k, picks);
}

static void fuzz_dlap(input_t *in, dpf_rng_t *r)
{
    uint64_t num = take64(in) | 1, den = take64(in) | 1;
    int64_t z;
    /* keep the expected value of a draw in a range that terminates quickly */
    if (num / den > ((uint64_t)1 << 40)) num = den;
    (void)dpf_discrete_laplace(r, num, den, &z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input_t in = {data, size};
    dpf_rng_t r;
    static const uint8_t key[32], nonce[12];
    int mapped = 0;
    if (!cc) {
        dpf_chacha_global_init();
        dpf_selection_init();
        cc = dpf_chacha_alloc(DPF_CHACHA_SEEDED, &mapped);
        if (!cc) abort();
    }
    dpf_chacha_key(cc, key, nonce, 0);
    memset(&r, 0, sizeof r);
    r.cc = cc;
    switch (take64(&in) & 3) {
    case 0: fuzz_svt(&in, &r); break;
    case 1: fuzz_grid(&in); break;
    case 2: fuzz_selection(&in, &r); break;
    default: fuzz_dlap(&in, &r); break;
    }
    return 0;
}

#ifdef DPF_FUZZ_STANDALONE
#include <stdio.h>
/* Without libFuzzer: N pseudo-random inputs (splitmix64), plus the files named after N. */
int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000, t;
    uint64_t x = 0x9e3779b97f4a7c15u;
    uint8_t buf[1024];
    int a;
    for (t = 0; t < n; t++) {
        size_t len = (size_t)(t % 1024), i;
        for (i = 0; i < len; i++) {
            uint64_t z = (x += 0x9e3779b97f4a7c15u);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
            buf[i] = (uint8_t)(z ^ (z >> 31));
        }
        LLVMFuzzerTestOneInput(buf, len);
    }
    for (a = 2; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        size_t len;
        if (!f) continue;
        len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, len);
    }
    printf("fuzz_params: %ld inputs, no sanitizer report\n", n);
    return 0;
}
#endif
