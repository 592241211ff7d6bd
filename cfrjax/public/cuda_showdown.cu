// The sorted showdown of `nb` subgames as one CUDA kernel, an XLA FFI custom call
// (`cfrjax.public.cuda_showdown`).
//
// Same tables and formula as `cfrjax.public.showdown_kernel` (the module docstring of
// `cfrjax.public.terminals`): a block per (subgame, `R` node rows) reads its rows of the
// reach into shared memory, builds each row's whole table there (the prefix sums `G` over
// the hands in strength order, a block scan, and `-D_c` over each card's hands, a warp per
// card, two hands a lane), and sums each hand's six table entries from it. The Pallas
// kernel writes its table to global memory and reads it back by gathers through the
// caches; here every gather is a shared-memory access, and global memory sees only the
// rows read and the values written, both coalesced, plus the subgame's index tables (read
// once a block, into registers). Shared memory's pipe, which warp shuffles share, bounds
// the kernel.
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

template <int T>
struct Tile {
  static constexpr int W = T / 32;
  static constexpr int HPT = (kMaxHands + T - 1) / T;   // hands (and sorted positions) per thread
  static constexpr int KPW = (kMaxCards + W - 1) / W;   // cards per warp
  static_assert(kMaxPerCard == 64, "a card's hands are two chunks of 32");
  int2 e[HPT][3];   // table entries of hands threadIdx.x + i T
  int sv[HPT];      // the hands at sorted positions p0 + i (H past the chunk)
  int cv[KPW][2];   // card w + kk W's hands m = 2 lane + c (H past the card)
};

// The register tiles of subgame b's tables (sorted order, cards' hands, table entries).
template <int T>
__device__ __forceinline__ void load_tables(Tile<T>& t, const int* __restrict__ sorted, const int* __restrict__ cards,
                                            const int* __restrict__ index, int b, int H, int C, int M, int per, int p0) {
  constexpr int W = Tile<T>::W;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int* srt = sorted + static_cast<size_t>(b) * H;
  const int* crd = cards + static_cast<size_t>(b) * C * M;
  const int* idx = index + static_cast<size_t>(b) * H * 6;
#pragma unroll
  for (int i = 0; i < Tile<T>::HPT; ++i) {
    const int h = threadIdx.x + i * T;
    const int2* eh = reinterpret_cast<const int2*>(idx + static_cast<size_t>(h < H ? h : 0) * 6);
#pragma unroll
    for (int j = 0; j < 3; ++j) t.e[i][j] = eh[j];
    t.sv[i] = (i < per && p0 + i < H) ? srt[p0 + i] : H;
  }
#pragma unroll
  for (int kk = 0; kk < Tile<T>::KPW; ++kk) {
    const int k = w + kk * W;
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int m = 2 * lane + c;
      t.cv[kk][c] = (k < C && m < M) ? crd[k * M + m] : H;
    }
  }
}

// The table of `R` rows whose reach is in shared memory (`xs`, rows of X = H + 1, entry H
// zero) into `tab` (rows of TW): G = P - P[H] / 2 over the hands in strength order (its
// entry H = P[H] / 2), then -D_c = P_c[M] / 2 - P_c over each card's hands in strength
// order, a warp per card. Starts after a barrier over the writes of `xs`; its first
// barrier (in the scan) comes after every read of `tab` before it.
template <int T, int R>
__device__ __forceinline__ void build_table(const Tile<T>& t, const float* xs, float* tab, float (*warp_sums)[33],
                                            int H, int C, int M, int X, int TW, int per, int p0) {
  constexpr int W = Tile<T>::W, HPT = Tile<T>::HPT;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  float gv[R][HPT], run[R], total[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    run[r] = 0.f;
#pragma unroll
    for (int i = 0; i < HPT; ++i) {
      gv[r][i] = xs[r * X + t.sv[i]];
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
#pragma unroll
  for (int kk = 0; kk < Tile<T>::KPW; ++kk) {
    const int k = w + kk * W;
    if (k < C) {
      const int base = H + 1 + k * (M + 1);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        // Two hands a lane, one warp scan of their sums (shuffles share the shared-memory
        // pipe, the kernel's bound: half the shuffles of a scan per 32 hands).
        const float v0 = xs[r * X + t.cv[kk][0]], v1 = xs[r * X + t.cv[kk][1]];
        const float pair = v0 + v1;
        const float inc = warp_inclusive_scan(pair, lane);
        const float tot = __shfl_sync(0xffffffffu, inc, 31);
        const float half = 0.5f * tot;
        const float ex = inc - pair;
        float* d = tab + r * TW + base;
        if (2 * lane < M) d[2 * lane] = half - ex;
        if (2 * lane + 1 < M) d[2 * lane + 1] = half - (ex + v0);
        if (lane == 0) d[M] = half - tot;
      }
    }
  }
}

// Hand threadIdx.x + i T's value from a table row: its six entries, G[lt] + G[le] - D_c1[lt1]
// - D_c1[le1] - D_c2[lt2] - D_c2[le2].
template <int T>
__device__ __forceinline__ float pick(const Tile<T>& t, const float* tab, int i) {
  float acc = tab[t.e[i][0].x];
  acc += tab[t.e[i][0].y];
  acc += tab[t.e[i][1].x];
  acc += tab[t.e[i][1].y];
  acc += tab[t.e[i][2].x];
  acc += tab[t.e[i][2].y];
  return acc;
}

// A block per (subgame, `R` node rows), the rows side by side: each index read from the
// subgame's tables serves all `R` rows. Every global load the block needs (the rows, the
// sorted order, the cards' hands, the hands' table entries) is issued first, into
// registers, so the block waits for memory once; then the table is built in shared
// memory and read back from there.
template <int T, int R>
__global__ void __launch_bounds__(T) showdown_kernel(const float* __restrict__ x, const int* __restrict__ sorted,
                                                     const int* __restrict__ cards, const int* __restrict__ index,
                                                     float* __restrict__ out, int Q, int H, int C, int M, int groups) {
  constexpr int HPT = Tile<T>::HPT;
  static_assert(R <= Tile<T>::W, "a warp per row scans the warp sums");
  extern __shared__ float smem[];
  __shared__ float warp_sums[R][33];
  const int X = H + 1, TW = H + 1 + C * (M + 1);
  float* xs = smem;                       // [R, X]
  float* tab = smem + R * X;              // [R, TW]
  const int b = blockIdx.x / groups;
  const int q0 = (blockIdx.x % groups) * R;
  const int nr = min(R, Q - q0);
  const size_t row0 = (static_cast<size_t>(b) * Q + q0) * H;
  const int per = (H + T - 1) / T;        // sorted positions per thread, a contiguous chunk from p0
  const int p0 = threadIdx.x * per;
  float xv[R][HPT];
#pragma unroll
  for (int i = 0; i < HPT; ++i) {
    const int h = threadIdx.x + i * T;
#pragma unroll
    for (int r = 0; r < R; ++r) xv[r][i] = (h < H && r < nr) ? x[row0 + r * H + h] : 0.f;
  }
  Tile<T> t;
  load_tables<T>(t, sorted, cards, index, b, H, C, M, per, p0);
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
  build_table<T, R>(t, xs, tab, warp_sums, H, C, M, X, TW, per, p0);
  __syncthreads();
#pragma unroll
  for (int i = 0; i < HPT; ++i) {
    const int h = threadIdx.x + i * T;
    if (h < H) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (r < nr) out[row0 + r * H + h] = pick<T>(t, tab + r * TW, i);
      }
    }
  }
}

// Floats of shared memory one row of a block takes: its reach (H + 1) and its table.
inline int64_t row_floats(int64_t H, int64_t C, int64_t M) { return 2 * (H + 1) + C * (M + 1); }

template <int T, int R>
cudaError_t launch(cudaStream_t stream, const float* x, const int* sorted, const int* cards, const int* index,
                   float* out, int64_t nb, int64_t Q, int64_t H, int64_t C, int64_t M) {
  const int64_t groups = (Q + R - 1) / R;
  const size_t smem = static_cast<size_t>(R * row_floats(H, C, M)) * sizeof(float);
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
  if (threads != 512) return ffi::Error::InvalidArgument("cfrjax showdown: built for 512 threads a block");
  // Fewer rows a block where the GPU has less shared memory per block (a T4 has 64 KB:
  // four of the turn's rows take 76).
  int device = 0, optin = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
  const int64_t row_bytes = (row_floats(H, C, M) + 33) * static_cast<int64_t>(sizeof(float));   // + its warp sums
  while (rows > 1 && rows * row_bytes > optin) rows /= 2;
  const float* xp = x.typed_data();
  const int *sp = sorted.typed_data(), *cp = cards.typed_data(), *ip = index.typed_data();
  float* op = out->typed_data();
  switch (rows) {
    case 1: err = launch<512, 1>(stream, xp, sp, cp, ip, op, nb, Q, H, C, M); break;
    case 2: err = launch<512, 2>(stream, xp, sp, cp, ip, op, nb, Q, H, C, M); break;
    case 4: err = launch<512, 4>(stream, xp, sp, cp, ip, op, nb, Q, H, C, M); break;
    default: return ffi::Error::InvalidArgument("cfrjax showdown: rows a block must be 1, 2 or 4");
  }
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
