// The sorted showdown of `nb` subgames as one CUDA kernel, an XLA FFI custom call
// (`cfrjax.public.cuda_showdown`).
//
// Same tables and formula as `cfrjax.public.showdown_kernel` (the module docstring of
// `cfrjax.public.terminals`): a block per (subgame, `rows` node rows) reads a row of the
// reach into shared memory, builds the row's whole table there (the prefix sums `G` over
// the hands in strength order and `-D_c` over each card's hands, a warp per card), and
// sums each hand's six table entries from it. The Pallas kernel writes its table to
// global memory and reads it back by gathers through the caches; here every gather is a
// shared-memory access, and global memory sees only the reach row read and the values
// written, both coalesced, plus the subgame's index tables (read through L1).
//
// Layouts (row-major): x, out [nb, Q, H] float32; sorted [nb, H], cards [nb, C, M]
// (padding H), index [nb, H, 6] int32 (`terminals.showdown_tables`).

#include <cuda_runtime.h>

#include <cstdint>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

__device__ __forceinline__ float warp_inclusive_scan(float v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    float n = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += n;
  }
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Exclusive prefixes of `R` values per thread over the block's threads in order (one scan
// per row of the block); `total[r]` the block's sums. `warp_sums` holds `R` x 33 floats;
// the caller syncs before the next use.
template <int T, int R>
__device__ __forceinline__ void block_exclusive_scan(float (&v)[R], float (*warp_sums)[33], float (&total)[R]) {
  constexpr int W = T / 32;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  float inc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    inc[r] = warp_inclusive_scan(v[r], lane);
    if (lane == 31) warp_sums[r][w] = inc[r];
  }
  __syncthreads();
  if (w < R) {   // warp r scans row r's warp sums
    float s = lane < W ? warp_sums[w][lane] : 0.f;
    float si = warp_inclusive_scan(s, lane);
    if (lane < W) warp_sums[w][lane] = si - s;
    if (lane == 31) warp_sums[w][32] = si;
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < R; ++r) {
    total[r] = warp_sums[r][32];
    v[r] = warp_sums[r][w] + (inc[r] - v[r]);
  }
}

// Limits of the kernel's register tiles: hands (H), cards (C) and hands per card (M).
constexpr int kMaxHands = 1536, kMaxCards = 52, kMaxPerCard = 64;

// A block per (subgame, `R` node rows), the rows side by side: each index read from the
// subgame's tables serves all `R` rows. Every global load the block needs (the rows, the
// sorted order, the cards' hands, the hands' table entries) is issued first, into
// registers, so the block waits for memory once; then the table is built in shared
// memory and read back from there.
template <int T, int R>
__global__ void __launch_bounds__(T) showdown_kernel(const float* __restrict__ x, const int* __restrict__ sorted,
                                                     const int* __restrict__ cards, const int* __restrict__ index,
                                                     float* __restrict__ out, int Q, int H, int C, int M, int groups) {
  constexpr int W = T / 32;
  constexpr int HPT = (kMaxHands + T - 1) / T;   // hands (and sorted positions) per thread
  constexpr int KPW = (kMaxCards + W - 1) / W;   // cards per warp
  static_assert(R <= W, "a warp per row scans the warp sums");
  static_assert(kMaxPerCard == 64, "a card's hands are two chunks of 32");
  extern __shared__ float smem[];
  __shared__ float warp_sums[R][33];
  const int X = H + 1;                    // xs row: the reach, entry H zero (the cards' padding)
  const int TW = H + 1 + C * (M + 1);     // tab row: G, then -D_c card after card
  float* xs = smem;                       // [R, X]
  float* tab = smem + R * X;              // [R, TW]
  const int b = blockIdx.x / groups;
  const int q0 = (blockIdx.x % groups) * R;
  const int nr = min(R, Q - q0);
  const size_t row0 = (static_cast<size_t>(b) * Q + q0) * H;
  const int* srt = sorted + static_cast<size_t>(b) * H;
  const int* crd = cards + static_cast<size_t>(b) * C * M;
  const int* idx = index + static_cast<size_t>(b) * H * 6;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int per = (H + T - 1) / T;        // sorted positions per thread, a contiguous chunk from p0
  const int p0 = threadIdx.x * per;
  // 1. Every global load, into registers.
  float xv[R][HPT];
  int2 e[HPT][3];
  int sv[HPT], cv[KPW][2];
#pragma unroll
  for (int i = 0; i < HPT; ++i) {
    const int h = threadIdx.x + i * T;
#pragma unroll
    for (int r = 0; r < R; ++r) xv[r][i] = (h < H && r < nr) ? x[row0 + r * H + h] : 0.f;
    const int2* eh = reinterpret_cast<const int2*>(idx + static_cast<size_t>(h < H ? h : 0) * 6);
#pragma unroll
    for (int j = 0; j < 3; ++j) e[i][j] = eh[j];
    sv[i] = (i < per && p0 + i < H) ? srt[p0 + i] : H;
  }
#pragma unroll
  for (int kk = 0; kk < KPW; ++kk) {
    const int k = w + kk * W;
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int m = c * 32 + lane;
      cv[kk][c] = (k < C && m < M) ? crd[k * M + m] : H;
    }
  }
  // 2. The rows into shared memory.
#pragma unroll
  for (int i = 0; i < HPT; ++i) {
    const int h = threadIdx.x + i * T;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (h < H) xs[r * X + h] = xv[r][i];
    }
  }
  if (threadIdx.x < R) xs[threadIdx.x * X + H] = 0.f;
  __syncthreads();
  // 3. G = P - P[H] / 2 over the hands in strength order; its entry H = P[H] / 2.
  float gv[R][HPT], run[R], total[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    run[r] = 0.f;
#pragma unroll
    for (int i = 0; i < HPT; ++i) {
      gv[r][i] = xs[r * X + sv[i]];
      run[r] += gv[r][i];
    }
  }
  block_exclusive_scan<T, R>(run, warp_sums, total);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float half = 0.5f * total[r];
#pragma unroll
    for (int i = 0; i < HPT; ++i) {
      if (i < per && p0 + i < H) tab[r * TW + p0 + i] = run[r] - half;
      run[r] += gv[r][i];
    }
    if (threadIdx.x == 0) tab[r * TW + H] = half;
  }
  // 4. -D_c = P_c[M] / 2 - P_c over card c's hands in strength order, a warp per card.
#pragma unroll
  for (int kk = 0; kk < KPW; ++kk) {
    const int k = w + kk * W;
    if (k < C) {
      const int base = H + 1 + k * (M + 1);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float v0 = xs[r * X + cv[kk][0]], v1 = xs[r * X + cv[kk][1]];
        const float i0 = warp_inclusive_scan(v0, lane);
        const float i1 = warp_inclusive_scan(v1, lane) + __shfl_sync(0xffffffffu, i0, 31);
        const float tot = __shfl_sync(0xffffffffu, i1, 31);
        const float half = 0.5f * tot;
        float* t = tab + r * TW + base;
        if (lane < M) t[lane] = half - (i0 - v0);
        if (32 + lane < M) t[32 + lane] = half - (i1 - v1);
        if (lane == 0) t[M] = half - tot;
      }
    }
  }
  __syncthreads();
  // 5. Each hand's six entries: G[lt] + G[le] - D_c1[lt1] - D_c1[le1] - D_c2[lt2] - D_c2[le2].
#pragma unroll
  for (int i = 0; i < HPT; ++i) {
    const int h = threadIdx.x + i * T;
    if (h < H) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (r < nr) {
          const float* t = tab + r * TW;
          float acc = t[e[i][0].x];
          acc += t[e[i][0].y];
          acc += t[e[i][1].x];
          acc += t[e[i][1].y];
          acc += t[e[i][2].x];
          acc += t[e[i][2].y];
          out[row0 + r * H + h] = acc;
        }
      }
    }
  }
}

template <int T, int R>
cudaError_t launch(cudaStream_t stream, const float* x, const int* sorted, const int* cards, const int* index,
                   float* out, int64_t nb, int64_t Q, int64_t H, int64_t C, int64_t M) {
  const int64_t groups = (Q + R - 1) / R;
  const size_t smem = static_cast<size_t>(R) * (2 * (H + 1) + C * (M + 1)) * sizeof(float);
  if (smem > 48 * 1024) {
    cudaError_t err = cudaFuncSetAttribute(showdown_kernel<T, R>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem));
    if (err != cudaSuccess) return err;
  }
  showdown_kernel<T, R><<<static_cast<unsigned>(nb * groups), T, smem, stream>>>(
      x, sorted, cards, index, out, static_cast<int>(Q), static_cast<int>(H), static_cast<int>(C),
      static_cast<int>(M), static_cast<int>(groups));
  return cudaGetLastError();
}

ffi::Error Showdown(cudaStream_t stream, ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::S32> sorted,
                    ffi::Buffer<ffi::S32> cards, ffi::Buffer<ffi::S32> index, ffi::ResultBuffer<ffi::F32> out,
                    int64_t rows, int64_t threads) {
  const auto xd = x.dimensions();
  const auto cd = cards.dimensions();
  if (xd.size() != 3 || cd.size() != 3 || cd[0] != xd[0]) {
    return ffi::Error::InvalidArgument("cfrjax showdown: x must be [nb, Q, H] and cards [nb, C, M]");
  }
  const int64_t nb = xd[0], Q = xd[1], H = xd[2], C = cd[1], M = cd[2];
  if (H > kMaxHands || C > kMaxCards || M > kMaxPerCard) {
    return ffi::Error::InvalidArgument("cfrjax showdown: at most 1536 hands, 52 cards and 64 hands per card");
  }
  if (nb * Q == 0 || H == 0) return ffi::Error::Success();
  cudaError_t err = cudaSuccess;
  const float* xp = x.typed_data();
  const int *sp = sorted.typed_data(), *cp = cards.typed_data(), *ip = index.typed_data();
  float* op = out->typed_data();
#define CFRJAX_LAUNCH(T, R) \
  if (threads == T && rows == R) err = launch<T, R>(stream, xp, sp, cp, ip, op, nb, Q, H, C, M); else
  CFRJAX_LAUNCH(512, 1) CFRJAX_LAUNCH(512, 2) CFRJAX_LAUNCH(512, 4)
  return ffi::Error::InvalidArgument("cfrjax showdown: no kernel for these threads and rows");
#undef CFRJAX_LAUNCH
  if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(CfrjaxShowdownCuda, Showdown,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<int64_t>("rows")
                                  .Attr<int64_t>("threads"),
                              {ffi::Traits::kCmdBufferCompatible});
