/* rnn_impl.h - the recurrent time loops of rnn.c for one real type
 * (internal): rnn.c includes it once per dtype with R (float or double),
 * RT (the cell_dtype) and SFX (the name suffix) defined. */
#define CAT2_(a, b) a##b
#define CAT_(a, b) CAT2_(a, b)
#define FN(name) CAT_(name, SFX)

static inline R FN(sig_)(R v) { return (R)1 / ((R)1 + REXP(-v)); }
static inline void FN(sig_run_)(R *v, int64_t n) {
  for (int64_t i = 0; i < n; i++) v[i] = FN(sig_)(v[i]);
}
static inline void FN(tanh_run_)(R *y, const R *v, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = RTANH(v[i]);
}

/* Forward of one layer-direction. x [T,B,I], h0/c0 [B,H], weights
 * contiguous; y the packed output [T+2,B,H]; ws the saved workspace. */
static cell_status FN(rnn_fwd_)(int mode, int64_t T, int64_t B, int64_t I, int64_t H, const R *x,
                                const R *h0, const R *c0, const R *wih, const R *whh,
                                const R *bih, const R *bhh, const int64_t *len, int reverse,
                                R *y, R *ws) {
  int64_t G = rnn_gates(mode), GH = G * H, BH = B * H;
  R *gates = ws, *hs = gates + T * B * GH, *cs = hs + (T + 1) * BH, *hnp = cs + (T + 1) * BH;
  R *xw = cell_alloc(sizeof(R) * (size_t)(T * B * GH)), *hh = cell_alloc(sizeof(R) * (size_t)(B * GH));
  if (!xw || !hh) {
    cell_dealloc(xw);
    cell_dealloc(hh);
    return cell_error(CELL_ERR_MEMORY, "rnn: out of memory for the gate buffers");
  }
  cell_status s = rnn_gemm(RT, T * B, GH, I, x, I, 1, wih, 1, I, xw);
  memcpy(hs, h0, sizeof(R) * (size_t)BH);
  if (mode == CELL_RNN_LSTM) memcpy(cs, c0, sizeof(R) * (size_t)BH);
  for (int64_t k = 0; k < T && s == CELL_OK; k++) {
    int64_t t = reverse ? T - 1 - k : k;
    R *hp = hs + k * BH, *hc = hs + (k + 1) * BH, *gk = gates + k * B * GH;
    s = rnn_gemm(RT, B, GH, H, hp, H, 1, whh, 1, H, hh);
    if (s != CELL_OK) break;
#pragma omp parallel for if (B * GH >= RNN_PARALLEL_MIN && cell_ctx()->num_threads > 1) schedule(static)
    for (int64_t b = 0; b < B; b++) {
      R *yb = y + (t * B + b) * H, *gb = gk + b * GH;
      const R *xb = xw + (t * B + b) * GH, *hb = hh + b * GH, *hpb = hp + b * H;
      R *hcb = hc + b * H;
      if (len && t >= len[b]) { /* past the sequence: state carried, output 0 */
        memcpy(hcb, hpb, sizeof(R) * (size_t)H);
        if (mode == CELL_RNN_LSTM)
          memcpy(cs + (k + 1) * BH + b * H, cs + k * BH + b * H, sizeof(R) * (size_t)H);
        memset(yb, 0, sizeof(R) * (size_t)H);
        memset(gb, 0, sizeof(R) * (size_t)GH);
        if (mode == CELL_RNN_GRU) memset(hnp + k * BH + b * H, 0, sizeof(R) * (size_t)H);
        continue;
      }
      if (mode == CELL_RNN_LSTM) {
        const R *cpb = cs + k * BH + b * H;
        R *ccb = cs + (k + 1) * BH + b * H;
        /* the gates [i f g o] in place over their pre-activations, each
         * nonlinearity one pass over a run (vector code for float32) */
        for (int64_t o = 0; o < GH; o++) gb[o] = xb[o] + hb[o] + (bih ? bih[o] : 0) + (bhh ? bhh[o] : 0);
        RVSIG(gb, 2 * H);
        RVTANH(gb + 2 * H, gb + 2 * H, H);
        RVSIG(gb + 3 * H, H);
        for (int64_t j = 0; j < H; j++) {
          R c = gb[H + j] * cpb[j] + gb[j] * gb[2 * H + j];
          ccb[j] = c;
          hcb[j] = c;
        }
        RVTANH(hcb, hcb, H);
        for (int64_t j = 0; j < H; j++) hcb[j] *= gb[3 * H + j];
      } else if (mode == CELL_RNN_GRU) {
        /* the gates [r z n] in place: r and z over their pre-activations,
         * then n's (which takes r), each nonlinearity one pass over a run */
        R *nb = hnp + k * BH + b * H;
        for (int64_t o = 0; o < 2 * H; o++) gb[o] = xb[o] + hb[o] + (bih ? bih[o] : 0) + (bhh ? bhh[o] : 0);
        RVSIG(gb, 2 * H);
        for (int64_t j = 0; j < H; j++) {
          R hn = hb[2 * H + j] + (bhh ? bhh[2 * H + j] : 0);
          nb[j] = hn;
          gb[2 * H + j] = xb[2 * H + j] + (bih ? bih[2 * H + j] : 0) + gb[j] * hn;
        }
        RVTANH(gb + 2 * H, gb + 2 * H, H);
        for (int64_t j = 0; j < H; j++) hcb[j] = ((R)1 - gb[H + j]) * gb[2 * H + j] + gb[H + j] * hpb[j];
      } else {
        for (int64_t j = 0; j < H; j++) {
          R a = xb[j] + hb[j] + (bih ? bih[j] : 0) + (bhh ? bhh[j] : 0);
          hcb[j] = mode == CELL_RNN_TANH ? a : (a > 0 ? a : 0);
        }
        if (mode == CELL_RNN_TANH) RVTANH(hcb, hcb, H);
      }
      memcpy(yb, hcb, sizeof(R) * (size_t)H);
    }
  }
  if (s == CELL_OK) {
    memcpy(y + T * BH, hs + T * BH, sizeof(R) * (size_t)BH);
    if (mode == CELL_RNN_LSTM)
      memcpy(y + (T + 1) * BH, cs + T * BH, sizeof(R) * (size_t)BH);
    else
      memset(y + (T + 1) * BH, 0, sizeof(R) * (size_t)BH);
  }
  cell_dealloc(xw);
  cell_dealloc(hh);
  return s;
}

/* Backward through time of one layer-direction: gy the packed gradient
 * [T+2,B,H]; results into gx [T,B,I], gh0, gc0 [B,H], gwih [GH,I], gwhh
 * [GH,H], gbih, gbhh [GH] (gc0, gbih, gbhh may be NULL). */
static cell_status FN(rnn_bwd_)(int mode, int64_t T, int64_t B, int64_t I, int64_t H, const R *x,
                                const R *wih, const R *whh, const R *ws, const int64_t *len,
                                int reverse, const R *gy, R *gx, R *gh0, R *gc0, R *gwih, R *gwhh,
                                R *gbih, R *gbhh) {
  int64_t G = rnn_gates(mode), GH = G * H, BH = B * H;
  const R *gates = ws, *hs = gates + T * B * GH, *cs = hs + (T + 1) * BH, *hnp = cs + (T + 1) * BH;
  R *dgx = cell_alloc(sizeof(R) * (size_t)(T * B * GH)), *dgh = cell_alloc(sizeof(R) * (size_t)(T * B * GH));
  R *dh = cell_alloc(sizeof(R) * (size_t)BH), *dc = cell_alloc(sizeof(R) * (size_t)BH),
    *dhp = cell_alloc(sizeof(R) * (size_t)BH);
  cell_status s = CELL_OK;
  if (!dgx || !dgh || !dh || !dc || !dhp) {
    s = cell_error(CELL_ERR_MEMORY, "rnn backward: out of memory for the gradient buffers");
    goto done;
  }
  memcpy(dh, gy + T * BH, sizeof(R) * (size_t)BH);
  if (mode == CELL_RNN_LSTM)
    memcpy(dc, gy + (T + 1) * BH, sizeof(R) * (size_t)BH);
  else
    memset(dc, 0, sizeof(R) * (size_t)BH);
  for (int64_t k = T - 1; k >= 0; k--) {
    int64_t t = reverse ? T - 1 - k : k;
    const R *gk = gates + k * B * GH, *hp = hs + k * BH, *hc = hs + (k + 1) * BH;
#pragma omp parallel for if (B * GH >= RNN_PARALLEL_MIN && cell_ctx()->num_threads > 1) schedule(static)
    for (int64_t b = 0; b < B; b++) {
      R *dxb = dgx + (t * B + b) * GH, *dhb_g = dgh + (k * B + b) * GH;
      R *dhb = dh + b * H, *dcb = dc + b * H, *dpb = dhp + b * H;
      if (len && t >= len[b]) {
        memset(dxb, 0, sizeof(R) * (size_t)GH);
        memset(dhb_g, 0, sizeof(R) * (size_t)GH);
        memcpy(dpb, dhb, sizeof(R) * (size_t)H);
        continue;
      }
      const R *gyb = gy + (t * B + b) * H, *gb = gk + b * GH;
      for (int64_t j = 0; j < H; j++) dhb[j] += gyb[j];
      if (mode == CELL_RNN_LSTM) {
        const R *cpb = cs + k * BH + b * H, *ccb = cs + (k + 1) * BH + b * H;
        RVTANH(dpb, ccb, H); /* tanh(c), in dpb until it is zeroed */
        for (int64_t j = 0; j < H; j++) {
          R ig = gb[j], fg = gb[H + j], gg = gb[2 * H + j], og = gb[3 * H + j];
          R tc = dpb[j];
          R d = dcb[j] + dhb[j] * og * ((R)1 - tc * tc);
          R ai = d * gg * ig * ((R)1 - ig), af = d * cpb[j] * fg * ((R)1 - fg),
            ag = d * ig * ((R)1 - gg * gg), ao = dhb[j] * tc * og * ((R)1 - og);
          dxb[j] = dhb_g[j] = ai;
          dxb[H + j] = dhb_g[H + j] = af;
          dxb[2 * H + j] = dhb_g[2 * H + j] = ag;
          dxb[3 * H + j] = dhb_g[3 * H + j] = ao;
          dcb[j] = d * fg;
          dpb[j] = 0;
        }
      } else if (mode == CELL_RNN_GRU) {
        const R *nb = hnp + k * BH + b * H, *hpb = hp + b * H;
        for (int64_t j = 0; j < H; j++) {
          R r = gb[j], z = gb[H + j], n = gb[2 * H + j], g = dhb[j];
          R an = g * ((R)1 - z) * ((R)1 - n * n);
          R az = g * (hpb[j] - n) * z * ((R)1 - z);
          R ar = an * nb[j] * r * ((R)1 - r);
          dxb[j] = dhb_g[j] = ar;
          dxb[H + j] = dhb_g[H + j] = az;
          dxb[2 * H + j] = an;
          dhb_g[2 * H + j] = an * r;
          dpb[j] = g * z;
        }
      } else {
        const R *hcb = hc + b * H;
        for (int64_t j = 0; j < H; j++) {
          R a = mode == CELL_RNN_TANH ? dhb[j] * ((R)1 - hcb[j] * hcb[j])
                                      : (hcb[j] > 0 ? dhb[j] : 0);
          dxb[j] = dhb_g[j] = a;
          dpb[j] = 0;
        }
      }
    }
    s = rnn_gemm(RT, B, H, GH, dgh + k * B * GH, GH, 1, whh, H, 1, dh);
    if (s != CELL_OK) goto done;
    RSIMD for (int64_t i = 0; i < BH; i++) dh[i] += dhp[i];
  }
  memcpy(gh0, dh, sizeof(R) * (size_t)BH);
  if (gc0) memcpy(gc0, dc, sizeof(R) * (size_t)BH);
  s = rnn_gemm(RT, T * B, I, GH, dgx, GH, 1, wih, I, 1, gx);
  if (s == CELL_OK) s = rnn_gemm(RT, GH, I, T * B, dgx, 1, GH, x, I, 1, gwih);
  if (s == CELL_OK) s = rnn_gemm(RT, GH, H, T * B, dgh, 1, GH, hs, H, 1, gwhh);
  if (s == CELL_OK && gbih && gbhh) {
    for (int64_t o = 0; o < GH; o++) gbih[o] = gbhh[o] = 0;
    for (int64_t r = 0; r < T * B; r++)
      RSIMD for (int64_t o = 0; o < GH; o++) {
        gbih[o] += dgx[r * GH + o];
        gbhh[o] += dgh[r * GH + o];
      }
  }
done:
  cell_dealloc(dgx);
  cell_dealloc(dgh);
  cell_dealloc(dh);
  cell_dealloc(dc);
  cell_dealloc(dhp);
  return s;
}

#undef FN
#undef CAT_
#undef CAT2_
