// The sorted showdown of one board on the CPU, as an XLA FFI handler (cfrjax/public/native.py).
//
// The same formula as cfrjax/public/terminals.py (its module docstring), from the same tables:
// with P the exclusive prefix sums of the reach in ascending strength order and P_c those of
// each card's hands, a hand's value Wk - St is G[lt] + G[le] - D_c1[lt1] - D_c1[le1] -
// D_c2[lt2] - D_c2[le2] (G = P - P[H] / 2, D_c = P_c - P_c[M] / 2; the six rows `index`
// names). XLA:CPU runs that as gathers, parallel prefix scans and materialising scatters, a
// few dozen kernels over memory per call; here it is two loops over rows of Q contiguous
// numbers (the prefix sums, then six rows and two card totals per hand), the table (a few
// hundred kilobytes on a full-range turn) staying in the cache.
//
// Operands: x [*lead, H, Q] (hand-major reach, float32 or float64), sorted [*lead, H],
// cards [*lead, C, M] (padded with H), index [*lead, H, 6] (int32); result [*lead, H, Q].
// Every operand has the same number of leading axes (`vmap_method="expand_dims"`), each of the
// tables' either the result's size or 1 (broadcast).

#include <algorithm>
#include <cstdint>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// out[h, :] for one board: x [H, Q] and out [H, Q] hand-major, the table [rows, Q] in
// `table`. `W > 0`: Q == W, known when compiling (every inner loop unrolled and
// vectorised); `W == 0`: any Q.
template <typename T, int W>
void OneBoard(const T* x, const int32_t* sorted, const int32_t* cards, const int32_t* index, T* out,
              int64_t H, int64_t Q_, int64_t C, int64_t M, std::vector<T>& table) {
  const int64_t Q = W > 0 ? W : Q_;
  const int64_t rows = H + 1 + C * (M + 1);
  table.resize(static_cast<size_t>(rows * Q));
  T* g = table.data();
  // Plain prefix sums of rows `order[0..n)` of x (an entry `H` adds nothing) into `base[0..n]`.
  auto prefix = [&](T* base, const int32_t* order, int64_t n) {
    for (int64_t q = 0; q < Q; ++q) base[q] = T(0);
    for (int64_t i = 0; i < n; ++i) {
      const T* prev = base + i * Q;
      T* row = base + (i + 1) * Q;
      if (order[i] < H) {
        const T* s = x + static_cast<int64_t>(order[i]) * Q;
        for (int64_t q = 0; q < Q; ++q) row[q] = prev[q] + s[q];
      } else {
        for (int64_t q = 0; q < Q; ++q) row[q] = prev[q];
      }
    }
  };
  prefix(g, sorted, H);                                                         // P
  for (int64_t c = 0; c < C; ++c) prefix(g + (H + 1 + c * (M + 1)) * Q, cards + c * M, M);   // P_c
  // The table holds P and P_c, not G and -D_c: with each list's total (P[H], P_c[M]) the
  // six terms are G[lt] + G[le] = P[lt] + P[le] - P[H] and, per card,
  // -D_c[lt] - D_c[le] = P_c[M] - P_c[lt] - P_c[le] (no pass over the table to centre it).
  const T* all = g + H * Q;
  for (int64_t h = 0; h < H; ++h) {
    const int32_t* e = index + h * 6;
    const int64_t c1 = (e[2] - (H + 1)) / (M + 1), c2 = (e[4] - (H + 1)) / (M + 1);
    const T* t1 = g + (H + 1 + c1 * (M + 1) + M) * Q;
    const T* t2 = g + (H + 1 + c2 * (M + 1) + M) * Q;
    const T* r0 = g + static_cast<int64_t>(e[0]) * Q;
    const T* r1 = g + static_cast<int64_t>(e[1]) * Q;
    const T* r2 = g + static_cast<int64_t>(e[2]) * Q;
    const T* r3 = g + static_cast<int64_t>(e[3]) * Q;
    const T* r4 = g + static_cast<int64_t>(e[4]) * Q;
    const T* r5 = g + static_cast<int64_t>(e[5]) * Q;
    T* o = out + h * Q;
    for (int64_t q = 0; q < Q; ++q) {
      o[q] = ((r0[q] + r1[q]) - all[q]) + ((t1[q] - r2[q]) - r3[q]) + ((t2[q] - r4[q]) - r5[q]);
    }
  }
}

template <typename T>
using BoardFn = void (*)(const T*, const int32_t*, const int32_t*, const int32_t*, T*, int64_t, int64_t, int64_t,
                         int64_t, std::vector<T>&);

// The instance for Q: widths up to 16 compiled fixed (a river's or turn's showdown rows
// per lane), others generic.
template <typename T, int W = 16>
BoardFn<T> ForWidth(int64_t Q) {
  if constexpr (W == 0) {
    return &OneBoard<T, 0>;
  } else {
    return Q == W ? &OneBoard<T, W> : ForWidth<T, W - 1>(Q);
  }
}

// Offset of leading multi-index `flat` (in the result's leading shape `lead`) in an operand
// whose leading shape `own` broadcasts to it, times `stride` elements per leading entry.
int64_t Offset(int64_t flat, const std::vector<int64_t>& lead, ffi::Span<const int64_t> own, int64_t stride) {
  int64_t off = 0, mult = 1;
  for (int64_t a = static_cast<int64_t>(lead.size()) - 1; a >= 0; --a) {
    const int64_t i = flat % lead[a];
    flat /= lead[a];
    if (own[a] != 1) off += i * mult;
    mult *= own[a];
  }
  return off * stride;
}

template <ffi::DataType DT>
ffi::Error Showdown(ffi::Buffer<DT> x, ffi::Buffer<ffi::S32> sorted, ffi::Buffer<ffi::S32> cards,
                    ffi::Buffer<ffi::S32> index, ffi::ResultBuffer<DT> out) {
  using T = ffi::NativeType<DT>;
  auto xd = x.dimensions(), sd = sorted.dimensions(), cd = cards.dimensions(), id = index.dimensions();
  if (xd.size() < 2 || sd.size() != xd.size() - 1 || cd.size() != xd.size() || id.size() != xd.size()) {
    return ffi::Error::InvalidArgument("cfrjax showdown: operands of inconsistent ranks");
  }
  const size_t k = xd.size() - 2;
  const int64_t H = xd[k], Q = xd[k + 1], C = cd[k], M = cd[k + 1];
  if (sd[k] != H || id[k] != H || id[k + 1] != 6) {
    return ffi::Error::InvalidArgument("cfrjax showdown: table shapes do not match the reach");
  }
  std::vector<int64_t> lead(xd.begin(), xd.begin() + k);
  int64_t n = 1;
  for (size_t a = 0; a < k; ++a) {
    for (auto d : {sd[a], cd[a], id[a]}) {
      if (d != 1 && d != lead[a]) return ffi::Error::InvalidArgument("cfrjax showdown: leading axes do not broadcast");
    }
    n *= lead[a];
  }
  static thread_local std::vector<T> table;
  const BoardFn<T> one = ForWidth<T>(Q);
  for (int64_t b = 0; b < n; ++b) {
    one(x.typed_data() + b * H * Q, sorted.typed_data() + Offset(b, lead, sd, H),
                cards.typed_data() + Offset(b, lead, cd, C * M), index.typed_data() + Offset(b, lead, id, H * 6),
                out->typed_data() + b * H * Q, H, Q, C, M, table);
  }
  return ffi::Error::Success();
}

}  // namespace

#define CFRJAX_SHOWDOWN(NAME, DT)                                  \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(NAME, Showdown<DT>, ffi::Ffi::Bind() \
                                    .Arg<ffi::Buffer<DT>>()        \
                                    .Arg<ffi::Buffer<ffi::S32>>()  \
                                    .Arg<ffi::Buffer<ffi::S32>>()  \
                                    .Arg<ffi::Buffer<ffi::S32>>()  \
                                    .Ret<ffi::Buffer<DT>>());

CFRJAX_SHOWDOWN(CfrjaxShowdownF32, ffi::F32)
CFRJAX_SHOWDOWN(CfrjaxShowdownF64, ffi::F64)
