// The public form's iteration on the CPU as XLA FFI handlers (cfrjax/public/native.py).
//
// * CfrjaxForest: every board's forest of a regret pass (the XLA form is
//   `cfrjax.public.passes._board`, mode "regret"): both players' reach down the forest,
//   the lanes' terminal values with card removal, the values back up, and each lane's
//   regrets and average terms of its slots.
// * CfrjaxHalf: a whole (half-)update of a river or turn spot (`native_calls.half`):
//   regret matching, the trunk's passes, every board's forest, the regret update and the
//   average update, each board's rows read and written once while in the cache.
//
// XLA:CPU runs the same as a few hundred small kernels over memory per board, and the
// whole-array updates as passes over every slot array; here a board's working set (its
// strategy, reach and values, [n][2][H]) stays in the cache, and a turn's boards are split
// over the threads the process may run on (its CPU affinity).
//
// Terminal values: folds by each card's sum of the opponent's reach (T - S[c1] - S[c2] +
// x[h]), showdowns by the sorted prefix sums of cfrjax/public/terminals.py (its module
// docstring: six rows of the tables per hand), W terminals at a time, hand-major.
//
// Layout: every per-hand array is row-major with H numbers per row; nodes are numbered
// breadth-first (every child after its parent); slots (strategy rows) of player 0 come first
// (`split` of them), player 1's after.

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int kCards = 52;
// Terminal columns per pass: a column per (terminal, lane), the opponent's reach transposed
// hand-major `[H + 1][W]` (row H zero: the tables' padding), every inner loop W contiguous
// numbers (one vector). Sums run in registers: a running sum kept in memory makes every step wait on the
// previous step's store (3-5x slower here).
// Columns per chunk: 8 (16, one AVX-512 register of float32, measured slower on a turn:
// 15.5 -> 17.5 ms/iter on one core, 12.4 -> 15 on two).
constexpr int64_t kChunk = 8;

// W numbers as one vector (GCC/Clang vector extensions: the widest registers the target has),
// loaded and stored unaligned.
template <typename T, int64_t W>
struct VecOf {
  typedef T type __attribute__((vector_size(W * sizeof(T))));
};
template <typename T, int64_t W>
using V = typename VecOf<T, W>::type;
template <int64_t W, typename T>
inline V<T, W> Load(const T* p) {
  V<T, W> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <typename T, typename Vec>
inline void Store(T* p, Vec v) {
  std::memcpy(p, &v, sizeof(v));
}

// Scratch rows start on cache lines (a vector of W numbers never straddles two).
template <typename T>
struct Aligned {
  using value_type = T;
  Aligned() = default;
  template <typename U>
  Aligned(const Aligned<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <typename U>
  bool operator==(const Aligned<U>&) const { return true; }
  template <typename U>
  bool operator!=(const Aligned<U>&) const { return false; }
};
template <typename T>
using Buf = std::vector<T, Aligned<T>>;

// The hands' card tables shared by all boards.
struct Hands {
  int64_t H;
  const int32_t* hand_cards;   // [H, 2]
  const int32_t* card_hands;   // [52, Mc], padded with H
  int64_t Mc;
};

// One tree (a board's forest, or the trunk) as the passes read it.
template <typename T>
struct Tree {
  int64_t n = 0, R = 1;                        // nodes; roots (nodes 0..R-1)
  const int32_t* parent = nullptr;             // [n]
  const int32_t* lane_slot = nullptr;          // [n, 2]: index into the strategy rows, or none
  int64_t F = 0, K = 0;
  const int32_t* fold_node = nullptr;          // [F]
  const T* fold_payoff = nullptr;              // [F], player 0's
  const int32_t* showdown_node = nullptr;      // [K]
  const T* stake = nullptr;                    // [K]
  const int32_t *sorted = nullptr, *cards = nullptr, *index = nullptr;   // this board's showdown tables
  int64_t C = 0, M = 0;
  const T* live = nullptr;                     // [H] or none (no card dealt above the tree)
};

// Strategy rows by the trees' slot indices (nullptr: the sentinel, weight 1).
template <typename T>
using Rows = std::vector<const T*>;

template <typename T>
struct Scratch {
  Buf<T> reach, vals, xs, out, acc, sig, total, zeros;
  Rows<T> rows;
};

// Folds: the compatible reach T - S[c1] - S[c2] + x[h] of W columns (each card's sum in two
// halves: two independent chains of additions).
template <int64_t W, typename T>
void Folds(const T* __restrict xs, const Hands& hs, T* __restrict per_card, T* __restrict out) {
  const int64_t H = hs.H;
  V<T, W> tot = {}, tot2 = {};
  int64_t h = 0;
  for (; h + 1 < H; h += 2) {
    tot += Load<W>(xs + h * W);
    tot2 += Load<W>(xs + (h + 1) * W);
  }
  if (h < H) tot += Load<W>(xs + h * W);
  tot += tot2;
  for (int64_t c = 0; c < kCards; ++c) {
    const int32_t* list = hs.card_hands + c * hs.Mc;
    V<T, W> a = {}, b = {};
    int64_t m = 0;
    for (; m + 1 < hs.Mc; m += 2) {
      a += Load<W>(xs + static_cast<int64_t>(list[m]) * W);
      b += Load<W>(xs + static_cast<int64_t>(list[m + 1]) * W);
    }
    if (m < hs.Mc) a += Load<W>(xs + static_cast<int64_t>(list[m]) * W);
    Store(per_card + c * W, a + b);
  }
  for (int64_t k = 0; k < H; ++k) {
    const V<T, W> a = Load<W>(per_card + hs.hand_cards[2 * k] * W);
    const V<T, W> b = Load<W>(per_card + hs.hand_cards[2 * k + 1] * W);
    Store(out + k * W, ((tot - a) - b) + Load<W>(xs + k * W));
  }
}

// Showdowns: Wk - St of W columns. The table holds P (`[H + 1]`, prefix sums over `sorted`)
// and every card's P_c (`[M + 1]`, over its row of `cards [C, M]`); a hand's value is
// P[lt] + P[le] - P[H] + sum_k (P_ck[M] - P_ck[ltk] - P_ck[lek]) (its six rows `index [H, 6]`).
template <int64_t W, typename T>
void Showdowns(const T* __restrict xs, const Tree<T>& t, int64_t H, T* __restrict table, T* __restrict out) {
  auto prefix = [&](T* base, const int32_t* order, int64_t n) {
    V<T, W> run = {};
    Store(base, run);
    for (int64_t i = 0; i < n; ++i) {
      run += Load<W>(xs + static_cast<int64_t>(order[i]) * W);
      Store(base + (i + 1) * W, run);
    }
  };
  const int64_t C = t.C, M = t.M;
  prefix(table, t.sorted, H);
  for (int64_t c = 0; c < C; ++c) prefix(table + (H + 1 + c * (M + 1)) * W, t.cards + c * M, M);
  const V<T, W> all = Load<W>(table + H * W);
  for (int64_t h = 0; h < H; ++h) {
    const int32_t* e = t.index + h * 6;
    const int64_t c1 = (e[2] - (H + 1)) / (M + 1), c2 = (e[4] - (H + 1)) / (M + 1);
    const V<T, W> t1 = Load<W>(table + (H + 1 + c1 * (M + 1) + M) * W);
    const V<T, W> t2 = Load<W>(table + (H + 1 + c2 * (M + 1) + M) * W);
    const V<T, W> r0 = Load<W>(table + static_cast<int64_t>(e[0]) * W), r1 = Load<W>(table + static_cast<int64_t>(e[1]) * W);
    const V<T, W> r2 = Load<W>(table + static_cast<int64_t>(e[2]) * W), r3 = Load<W>(table + static_cast<int64_t>(e[3]) * W);
    const V<T, W> r4 = Load<W>(table + static_cast<int64_t>(e[4]) * W), r5 = Load<W>(table + static_cast<int64_t>(e[5]) * W);
    Store(out + h * W, ((r0 + r1) - all) + ((t1 - r2) - r3) + ((t2 - r4) - r5));
  }
}

// Both players' reach [n][2][H]: the roots' rows from `root(r, p)` (times the live hands),
// then parent times strategy.
template <typename T, typename RootFn>
void Forward(const Tree<T>& t, const Rows<T>& sig, int64_t H, RootFn root, T* reach) {
  for (int64_t r = 0; r < t.R; ++r) {
    for (int p = 0; p < 2; ++p) {
      const T* src = root(r, p);
      T* dst = reach + (r * 2 + p) * H;
      if (t.live) {
        for (int64_t h = 0; h < H; ++h) dst[h] = src[h] * t.live[h];
      } else {
        std::memcpy(dst, src, sizeof(T) * H);
      }
    }
  }
  for (int64_t c = t.R; c < t.n; ++c) {
    for (int p = 0; p < 2; ++p) {
      const T* up = reach + (t.parent[c] * 2 + p) * H;
      T* dst = reach + (c * 2 + p) * H;
      const T* sg = sig[t.lane_slot[2 * c + p]];
      if (sg) {
        for (int64_t h = 0; h < H; ++h) dst[h] = up[h] * sg[h];
      } else {
        std::memcpy(dst, up, sizeof(T) * H);
      }
    }
  }
}

// One chunk of `count` (<= W) columns: the reach rows `src` in (transposed hand-major),
// folds or showdowns, values times `scale` (and the live hands) out to the rows `dst`.
template <int64_t W, typename T>
void Chunk(const Tree<T>& t, const Hands& hs, bool folds, const T* const* src, T* const* dst, const T* scale,
           int64_t count, Scratch<T>& w) {
  const int64_t H = hs.H;
  T* xs = w.xs.data();
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t q = 0; q < W; ++q) xs[h * W + q] = src[q][h];
  }
  std::fill(xs + H * W, xs + (H + 1) * W, T(0));
  if (folds) {
    Folds<W>(xs, hs, w.acc.data(), w.out.data());
  } else {
    Showdowns<W>(xs, t, H, w.acc.data(), w.out.data());
  }
  const T* o = w.out.data();
  for (int64_t q = 0; q < count; ++q) {
    T* v = dst[q];
    if (t.live) {
      for (int64_t h = 0; h < H; ++h) v[h] = o[h * W + q] * scale[q] * t.live[h];
    } else {
      for (int64_t h = 0; h < H; ++h) v[h] = o[h * W + q] * scale[q];
    }
  }
}

// The lanes' terminal values into their nodes' rows of `vals [n][L][H]`: a column per
// (fold, lane), and apart from them a column per (showdown, lane), `kChunk` to a chunk.
template <typename T>
void Terminals(const Tree<T>& t, const Hands& hs, const int* lanes, int L, T inv_z, const T* reach, T* vals,
               Scratch<T>& w) {
  const int64_t H = hs.H;
  const int64_t Qf = t.F * L, Qs = t.K * L;
  if (!Qf && !Qs) return;
  w.xs.resize(static_cast<size_t>((H + 1) * kChunk));
  w.out.resize(static_cast<size_t>(H * kChunk));
  w.acc.resize(static_cast<size_t>(std::max<int64_t>(kCards, H + 1 + t.C * (t.M + 1)) * kChunk));
  w.zeros.assign(static_cast<size_t>(H), T(0));     // the unused columns' reach
  for (int folds = 1; folds >= 0; --folds) {
    const int64_t Q = folds ? Qf : Qs;
    for (int64_t c0 = 0; c0 < Q;) {
      const int64_t count = std::min(kChunk, Q - c0);
      const T* src[kChunk];
      T* dst[kChunk];
      T scale[kChunk];
      for (int64_t q = 0; q < kChunk; ++q) {
        src[q] = w.zeros.data();
        dst[q] = nullptr;
        scale[q] = T(0);
        if (q >= count) continue;
        const int64_t col = c0 + q;
        const int i = static_cast<int>(col % L), p = lanes[i];
        const int64_t node = folds ? t.fold_node[col / L] : t.showdown_node[col / L];
        src[q] = reach + (node * 2 + (1 - p)) * H;
        dst[q] = vals + (node * L + i) * H;
        scale[q] = folds ? (t.fold_payoff[col / L] * (p == 0 ? T(1) : T(-1))) * inv_z
                         : t.stake[col / L] * inv_z;   // Wk - St is each lane's own
      }
      Chunk<kChunk>(t, hs, folds, src, dst, scale, count, w);
      c0 += count;
    }
  }
}

// Values up the tree: every node below the roots added into its parent, weighted by the
// lane player's own strategy (1 at the opponent's and chance nodes); children come after
// their parents, so descending order finishes a node before adding it.
template <typename T>
void Backward(const Tree<T>& t, const Rows<T>& sig, int64_t H, const int* lanes, int L, T* vals) {
  for (int64_t c = t.n - 1; c >= t.R; --c) {
    const int64_t up = t.parent[c];
    for (int i = 0; i < L; ++i) {
      const T* v = vals + (c * L + i) * H;
      T* dst = vals + (up * L + i) * H;
      const T* sg = sig[t.lane_slot[2 * c + lanes[i]]];
      if (sg) {
        for (int64_t h = 0; h < H; ++h) dst[h] += sg[h] * v[h];
      } else {
        for (int64_t h = 0; h < H; ++h) dst[h] += v[h];
      }
    }
  }
}

template <typename T>
void MatchRow(const T* __restrict r, const T* __restrict tot, T uniform, int64_t H, T* __restrict o) {
  for (int64_t h = 0; h < H; ++h) {
    const T pos = std::max(r[h], T(0));
    const T safe = tot[h] > T(0) ? tot[h] : T(1);
    const T q = pos / safe;
    o[h] = tot[h] > T(0) ? q : uniform;
  }
}

template <typename T>
void AddPositive(const T* __restrict r, int64_t H, bool first, T* __restrict tot) {
  if (first) {
    for (int64_t h = 0; h < H; ++h) tot[h] = std::max(r[h], T(0));
  } else {
    for (int64_t h = 0; h < H; ++h) tot[h] += std::max(r[h], T(0));
  }
}

// Regret matching of `count` slots grouped by node (`slot_node`, each node's slots
// adjacent): positive regrets over their node's sum, uniform where the sum is not positive.
// The sum runs over the node's slots in order (as `cfrjax.passes._matched_runs`).
template <typename T>
void Match(const T* const* regret, int64_t count, const int32_t* slot_node, int64_t H, T* out, Buf<T>& total) {
  total.resize(static_cast<size_t>(H));
  int64_t j0 = 0;
  while (j0 < count) {
    int64_t j1 = j0 + 1;
    while (j1 < count && slot_node[j1] == slot_node[j0]) ++j1;
    for (int64_t j = j0; j < j1; ++j) AddPositive(regret[j], H, j == j0, total.data());
    const T uniform = T(1) / static_cast<T>(j1 - j0);
    for (int64_t j = j0; j < j1; ++j) MatchRow(regret[j], total.data(), uniform, H, out + j * H);
    j0 = j1;
  }
}

int Threads(int64_t boards) {
  cpu_set_t set;
  const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(cpus, boards)));
}

// `board(b, scratch)` for every board, the boards split over the threads.
template <typename T, typename Fn>
void ForBoards(int64_t B, Fn board) {
  const int threads = Threads(B);
  auto run = [&](int k) {
    static thread_local Scratch<T> w;
    for (int64_t b = k; b < B; b += threads) board(b, w);
  };
  std::vector<std::thread> pool;
  for (int k = 1; k < threads; ++k) pool.emplace_back(run, k);
  run(0);
  for (auto& th : pool) th.join();
}

ffi::Error Lanes(int64_t mask, int* lanes, int* L) {
  if (mask == 3) {
    lanes[0] = 0;
    lanes[1] = 1;
    *L = 2;
  } else if (mask == 1 || mask == 2) {
    lanes[0] = static_cast<int>(mask - 1);
    *L = 1;
  } else {
    return ffi::Error::InvalidArgument("cfrjax native: lanes must be 1, 2 or 3");
  }
  return ffi::Error::Success();
}

// The forest tree of board b (showdown tables of its board, live hands if dealt).
template <typename T>
Tree<T> ForestOf(ffi::Buffer<ffi::S32>& parent, ffi::Buffer<ffi::S32>& lane_slot, ffi::Buffer<ffi::S32>& fold_node,
                 const T* fold_payoff, ffi::Buffer<ffi::S32>& showdown_node, const T* stake,
                 ffi::Buffer<ffi::S32>& sorted, ffi::Buffer<ffi::S32>& cards, ffi::Buffer<ffi::S32>& index,
                 const T* live, bool dealt, int64_t R, int64_t H, int64_t b) {
  Tree<T> t;
  t.n = parent.element_count();
  t.R = R;
  t.parent = parent.typed_data();
  t.lane_slot = lane_slot.typed_data();
  t.F = fold_node.element_count();
  t.fold_node = fold_node.typed_data();
  t.fold_payoff = fold_payoff;
  t.K = showdown_node.element_count();
  t.showdown_node = showdown_node.typed_data();
  t.stake = stake;
  auto cd = cards.dimensions();
  t.C = cd[cd.size() - 2];
  t.M = cd[cd.size() - 1];
  t.sorted = sorted.typed_data() + b * H;
  t.cards = cards.typed_data() + b * t.C * t.M;
  t.index = index.typed_data() + b * H * 6;
  t.live = dealt ? live + b * H : nullptr;
  return t;
}

ffi::Error CheckTables(int64_t B, int64_t H, ffi::Buffer<ffi::S32>& sorted, ffi::Buffer<ffi::S32>& cards,
                       ffi::Buffer<ffi::S32>& index, ffi::Buffer<ffi::S32>& hand_cards,
                       ffi::Buffer<ffi::S32>& card_hands, int64_t live_count) {
  auto cd = cards.dimensions(), chd = card_hands.dimensions();
  if (cd.size() != 3 || chd.size() != 2 || cd[0] != B || cd[1] != kCards || chd[0] != kCards ||
      sorted.element_count() != B * H || index.element_count() != B * H * 6 || hand_cards.element_count() != 2 * H ||
      live_count != B * H) {
    return ffi::Error::InvalidArgument("cfrjax native: showdown or card tables do not match the boards and hands");
  }
  return ffi::Error::Success();
}

// ---------------------------------------------------------------------------------------
// CfrjaxForest: operands (s0 / s1 forest slots per board of player 0 / 1; local slot j < s0
// is player 0's, s0 <= j < s0 + s1 player 1's, s0 + s1 the sentinel):
//   sig0 [*, H], sig1 [*, H]: the strategy; board b's rows from off0 + b s0 / off1 + b s1.
//   regret [*, H]: the lanes' cumulative regrets; lane p's board b from roff_p + b s_p.
//   root [G R, 2, H]: both players' reach at the forest roots (board b: group root_group[b]).
//   live [B, H], fold_payoff [F] (player 0's), showdown_stake [K], norm [] (Z); the showdown
//   tables sorted [B, H], cards [B, 52, M], index [B, H, 6] (terminals.showdown_tables),
//   hand_cards [H, 2], card_hands [52, Mc]; the forest parent [n], lane_slot [n, 2],
//   fold_node [F], showdown_node [K], slot_node [s0 + s1], slot_child [s0 + s1], root_group [B].
// Results: root values [B, R, L, H]; new regrets and average terms [sum_p (t_p + B s_p), H],
// the lanes' rows in lane order as the regret pass returns them: lane p's t_p trunk rows
// (from regret's t_p rows before roff_p, passed through; y zero), then its boards' rows.

template <ffi::DataType DT>
ffi::Error Forest(ffi::Buffer<DT> sig0, ffi::Buffer<DT> sig1, ffi::Buffer<DT> regret, ffi::Buffer<DT> root,
                  ffi::Buffer<DT> live, ffi::Buffer<DT> fold_payoff, ffi::Buffer<DT> showdown_stake,
                  ffi::Buffer<DT> norm, ffi::Buffer<ffi::S32> sorted, ffi::Buffer<ffi::S32> cards,
                  ffi::Buffer<ffi::S32> index, ffi::Buffer<ffi::S32> hand_cards, ffi::Buffer<ffi::S32> card_hands,
                  ffi::Buffer<ffi::S32> parent, ffi::Buffer<ffi::S32> lane_slot, ffi::Buffer<ffi::S32> fold_node,
                  ffi::Buffer<ffi::S32> showdown_node, ffi::Buffer<ffi::S32> slot_node,
                  ffi::Buffer<ffi::S32> slot_child, ffi::Buffer<ffi::S32> root_group, int64_t lanes_mask,
                  int64_t off0, int64_t off1, int64_t roff0, int64_t roff1, int64_t s0, int64_t s1, int64_t t0,
                  int64_t t1, int64_t dealt, ffi::ResultBuffer<DT> root_out, ffi::ResultBuffer<DT> regret_out,
                  ffi::ResultBuffer<DT> y_out) {
  using T = ffi::NativeType<DT>;
  int lanes[2] = {0, 0}, L = 0;
  if (auto e = Lanes(lanes_mask, lanes, &L); e.failure()) return e;
  auto rd = root_out->dimensions();
  if (rd.size() != 4 || rd[2] != L) return ffi::Error::InvalidArgument("cfrjax forest: root values must be [B, R, L, H]");
  const int64_t B = rd[0], R = rd[1], H = rd[3], n = parent.element_count();
  if (auto e = CheckTables(B, H, sorted, cards, index, hand_cards, card_hands, live.element_count()); e.failure()) {
    return e;
  }
  if (lane_slot.element_count() != 2 * n || slot_node.element_count() != s0 + s1 ||
      slot_child.element_count() != s0 + s1 || root_group.element_count() != B) {
    return ffi::Error::InvalidArgument("cfrjax forest: tree shapes do not match");
  }
  const int64_t trunk[2] = {t0, t1}, size[2] = {s0, s1}, roff[2] = {roff0, roff1};
  int64_t out_off[2] = {0, 0}, rows = 0;
  for (int i = 0; i < L; ++i) {
    rows += trunk[lanes[i]];
    out_off[i] = rows;
    rows += B * size[lanes[i]];
  }
  if (regret_out->element_count() != rows * H || y_out->element_count() != rows * H) {
    return ffi::Error::InvalidArgument("cfrjax forest: regret rows do not match the lanes' slots");
  }
  const Hands hs{H, hand_cards.typed_data(), card_hands.typed_data(), card_hands.dimensions()[1]};
  const T inv_z = T(1) / norm.typed_data()[0];
  T* root_o = root_out->typed_data();
  T* reg_o = regret_out->typed_data();
  T* y_o = y_out->typed_data();
  ForBoards<T>(B, [&](int64_t b, Scratch<T>& w) {
    Tree<T> t = ForestOf<T>(parent, lane_slot, fold_node, fold_payoff.typed_data(), showdown_node,
                            showdown_stake.typed_data(), sorted, cards, index, live.typed_data(), dealt != 0, R, H, b);
    w.rows.assign(static_cast<size_t>(s0 + s1 + 1), nullptr);
    for (int64_t j = 0; j < s0; ++j) w.rows[j] = sig0.typed_data() + (off0 + b * s0 + j) * H;
    for (int64_t j = 0; j < s1; ++j) w.rows[s0 + j] = sig1.typed_data() + (off1 + b * s1 + j) * H;
    w.reach.resize(static_cast<size_t>(t.n * 2 * H));
    w.vals.assign(static_cast<size_t>(t.n * L * H), T(0));
    const T* roots = root.typed_data() + static_cast<int64_t>(root_group.typed_data()[b]) * R * 2 * H;
    Forward(t, w.rows, H, [&](int64_t r, int p) { return roots + (r * 2 + p) * H; }, w.reach.data());
    Terminals(t, hs, lanes, L, inv_z, w.reach.data(), w.vals.data(), w);
    Backward(t, w.rows, H, lanes, L, w.vals.data());
    for (int64_t r = 0; r < R; ++r) {
      for (int i = 0; i < L; ++i) {
        std::memcpy(root_o + ((b * R + r) * L + i) * H, w.vals.data() + (r * L + i) * H, sizeof(T) * H);
      }
    }
    for (int i = 0; i < L; ++i) {
      const int p = lanes[i];
      const int64_t lo = p == 0 ? 0 : s0;
      for (int64_t j = 0; j < size[p]; ++j) {
        const int64_t slot = lo + j;
        const T* vc = w.vals.data() + (slot_child.typed_data()[slot] * L + i) * H;
        const T* vn = w.vals.data() + (slot_node.typed_data()[slot] * L + i) * H;
        const T* rc = w.reach.data() + (slot_node.typed_data()[slot] * 2 + p) * H;
        const T* sg = w.rows[slot];
        const T* old = regret.typed_data() + (roff[p] + b * size[p] + j) * H;
        T* nr = reg_o + (out_off[i] + b * size[p] + j) * H;
        T* y = y_o + (out_off[i] + b * size[p] + j) * H;
        for (int64_t h = 0; h < H; ++h) {
          nr[h] = old[h] + (vc[h] - vn[h]);
          y[h] = rc[h] * sg[h];
        }
      }
    }
  });
  for (int i = 0; i < L; ++i) {
    const int64_t t = trunk[lanes[i]];
    if (!t) continue;
    std::memcpy(reg_o + (out_off[i] - t) * H, regret.typed_data() + (roff[lanes[i]] - t) * H, sizeof(T) * t * H);
    std::memset(y_o + (out_off[i] - t) * H, 0, sizeof(T) * t * H);
  }
  return ffi::Error::Success();
}

// ---------------------------------------------------------------------------------------
// CfrjaxHalf: one (half-)update of `lanes`' slots of a river or turn spot (no flop).
// Slots: player 0's trunk slots 0..t0-1, then board b's t0 + b s0 + j; player 1's from
// `split`: split + j (trunk), split + t1 + b s1 + j (boards); S = split + t1 + B s1.
// Operands:
//   own [rows, H]: the lanes' regrets (after this iteration's discount), updated in place;
//     other: the other player's half when one lane updates (player 0's rows 0..split-1, or
//     player 1's from split), any array otherwise. The strategy is matched from both.
//   weights [2, H]; live [B, H]; forest fold_payoff [F], showdown_stake [K]; trunk
//     fold_payoff [F1]; norm [] (Z); avg, comp [rows, H] (the lanes' rows, as the results);
//     scalars [3]: the average's coefficient b_t / W_t, the update discount of positive and
//     negative regrets (1 and 1 where the rule has none); policy [S, H] and locked [S, H]
//     (bool): locked rows play the policy (node locking), or [1, 1] each for no locks.
//   The showdown and card tables as CfrjaxForest's; the forest parent, lane_slot (local),
//     fold_node, showdown_node, slot_node, slot_child; the trunk parent [n1], lane_slot
//     [n1, 2] (global slots, S the sentinel), fold_node [F1], slot_node, slot_child
//     [t0 + t1], root_chance [R] (the trunk node above each forest root).
// Attributes: lanes (1, 2, 3: player 0, 1, both), split, s0, s1, t0, t1,
//   dealt, clamp (CFR+: regrets kept non-negative), compensated (float32: the average's
//   compensated update, `cfrjax.iteration.compensated_mean_update`; else the plain running
//   mean and `comp` passed through), unweighted (the average of the strategy itself).
// Results: new regrets, average and compensation of the lanes' rows (lane p's slots from
//   its first, 0 or split, in lane order: the layout of `own` and `avg`), each aliasing its
//   operand (own, avg, comp).

template <typename T>
struct HalfRule {
  T coef, pos, neg;
  bool clamp, compensated, unweighted;
};

// The update of one slot row in place: the regret with this iteration's (vc - vn) added,
// the average with y = reach times strategy (or the strategy). The rule's switches are
// template arguments: every loop straight-line and vectorised.
template <typename T, bool kClamp, bool kCompensated, bool kUnweighted>
void UpdateRow(const HalfRule<T>& rule, int64_t H, const T* __restrict vc, const T* __restrict vn,
               const T* __restrict rc, const T* __restrict sg, T* __restrict reg, T* __restrict mean_io,
               T* __restrict comp_io) {
  const T pos = rule.pos, neg = rule.neg, coef = rule.coef;
  for (int64_t h = 0; h < H; ++h) {
    const T o = reg[h];
    const T r = o * (o > T(0) ? pos : neg) + (vc[h] - vn[h]);
    reg[h] = kClamp ? std::max(r, T(0)) : r;
  }
  for (int64_t h = 0; h < H; ++h) {
    const T y = kUnweighted ? sg[h] : rc[h] * sg[h];
    const T mean = mean_io[h];
    if (kCompensated) {
      const T comp = comp_io[h];
      const T inc = comp + coef * ((y - mean) - comp);
      const T total = mean + inc;
      const T back = total - mean;
      mean_io[h] = total;
      comp_io[h] = (mean - (total - back)) + (inc - back);
    } else {
      mean_io[h] = mean + coef * (y - mean);
    }
  }
}

template <typename T>
using UpdateFn = void (*)(const HalfRule<T>&, int64_t, const T*, const T*, const T*, const T*, T*, T*, T*);

template <typename T>
UpdateFn<T> UpdateFor(const HalfRule<T>& r) {
  const int k = (r.clamp ? 4 : 0) + (r.compensated ? 2 : 0) + (r.unweighted ? 1 : 0);
  static const UpdateFn<T> table[8] = {
      &UpdateRow<T, false, false, false>, &UpdateRow<T, false, false, true>, &UpdateRow<T, false, true, false>,
      &UpdateRow<T, false, true, true>,   &UpdateRow<T, true, false, false>, &UpdateRow<T, true, false, true>,
      &UpdateRow<T, true, true, false>,   &UpdateRow<T, true, true, true>};
  return table[k];
}

template <ffi::DataType DT>
ffi::Error Half(ffi::Buffer<DT> own, ffi::Buffer<DT> other, ffi::Buffer<DT> weights, ffi::Buffer<DT> live,
                ffi::Buffer<DT> fold_payoff, ffi::Buffer<DT> showdown_stake, ffi::Buffer<DT> trunk_fold_payoff,
                ffi::Buffer<DT> norm, ffi::Buffer<DT> avg, ffi::Buffer<DT> comp, ffi::Buffer<DT> scalars,
                ffi::Buffer<DT> policy, ffi::Buffer<ffi::PRED> locked, ffi::Buffer<ffi::S32> sorted, ffi::Buffer<ffi::S32> cards, ffi::Buffer<ffi::S32> index,
                ffi::Buffer<ffi::S32> hand_cards, ffi::Buffer<ffi::S32> card_hands, ffi::Buffer<ffi::S32> parent,
                ffi::Buffer<ffi::S32> lane_slot, ffi::Buffer<ffi::S32> fold_node,
                ffi::Buffer<ffi::S32> showdown_node, ffi::Buffer<ffi::S32> slot_node,
                ffi::Buffer<ffi::S32> slot_child, ffi::Buffer<ffi::S32> trunk_parent,
                ffi::Buffer<ffi::S32> trunk_lane_slot, ffi::Buffer<ffi::S32> trunk_fold_node,
                ffi::Buffer<ffi::S32> trunk_slot_node, ffi::Buffer<ffi::S32> trunk_slot_child,
                ffi::Buffer<ffi::S32> root_chance, int64_t lanes_mask, int64_t split,
                int64_t s0, int64_t s1, int64_t t0, int64_t t1, int64_t dealt, int64_t clamp, int64_t compensated,
                int64_t unweighted, ffi::ResultBuffer<DT> regret_out, ffi::ResultBuffer<DT> avg_out,
                ffi::ResultBuffer<DT> comp_out) {
  using T = ffi::NativeType<DT>;
  int lanes[2] = {0, 0}, L = 0;
  if (auto e = Lanes(lanes_mask, lanes, &L); e.failure()) return e;
  const int64_t B = live.dimensions()[0], H = weights.dimensions()[1];
  if (auto e = CheckTables(B, H, sorted, cards, index, hand_cards, card_hands, live.element_count()); e.failure()) {
    return e;
  }
  const int64_t n1 = trunk_parent.element_count(), R = root_chance.element_count() ? root_chance.element_count() : 1;
  const int64_t S = split + t1 + B * s1;
  if (split != t0 + B * s0 || lane_slot.element_count() != 2 * parent.element_count() ||
      slot_node.element_count() != s0 + s1 || slot_child.element_count() != s0 + s1 ||
      trunk_lane_slot.element_count() != 2 * n1 || trunk_slot_node.element_count() != t0 + t1 ||
      (n1 > 0) != (root_chance.element_count() > 0) || scalars.element_count() != 3) {
    return ffi::Error::InvalidArgument("cfrjax half: tree shapes do not match");
  }
  const int64_t first = lanes[0] == 0 ? 0 : split;
  const int64_t rows = (lanes[L - 1] == 0 ? split : S) - first;
  if (regret_out->element_count() != rows * H || avg.element_count() != rows * H ||
      avg_out->element_count() != rows * H || (compensated && comp.element_count() != rows * H)) {
    return ffi::Error::InvalidArgument("cfrjax half: the average's rows do not match the lanes' slots");
  }
  const int64_t other_first = first == 0 ? split : 0;
  if (own.element_count() != rows * H || (L == 1 && other.element_count() != (first == 0 ? S - split : split) * H)) {
    return ffi::Error::InvalidArgument("cfrjax half: the regrets' rows do not match the lanes' slots");
  }
  const Hands hs{H, hand_cards.typed_data(), card_hands.typed_data(), card_hands.dimensions()[1]};
  const T inv_z = T(1) / norm.typed_data()[0];
  const T* sc = scalars.typed_data();
  const HalfRule<T> rule{sc[0], sc[1], sc[2], clamp != 0, compensated != 0, unweighted != 0};
  // Updated in place: each result aliases its operand (native.half), copied first where
  // XLA gave it a buffer of its own. A board reads its own rows before it updates them,
  // and no other board's; the trunk's rows are read first and updated last.
  T* reg_o = regret_out->typed_data();
  T* avg_o = avg_out->typed_data();
  T* comp_o = comp_out->typed_data();
  const size_t bytes = sizeof(T) * rows * H;
  if (reg_o != own.typed_data()) std::memcpy(reg_o, own.typed_data(), bytes);
  if (avg_o != avg.typed_data()) std::memcpy(avg_o, avg.typed_data(), bytes);
  if (compensated && comp_o != comp.typed_data()) std::memcpy(comp_o, comp.typed_data(), bytes);
  const bool locks = locked.element_count() == S * H;
  if (locks && policy.element_count() != S * H) {
    return ffi::Error::InvalidArgument("cfrjax half: the locked policy must be [S, H] as the lock mask");
  }
  // Locked rows play the given policy (`locked [S, H]`): matched, then overridden.
  auto lock = [&](int64_t g, T* row) {
    if (!locks) return;
    const bool* m = locked.typed_data() + g * H;
    const T* pol = policy.typed_data() + g * H;
    for (int64_t h = 0; h < H; ++h) row[h] = m[h] ? pol[h] : row[h];
  };
  auto regret_row = [&](int64_t g) -> const T* {
    return g >= first && g < first + rows ? reg_o + (g - first) * H : other.typed_data() + (g - other_first) * H;
  };
  const UpdateFn<T> update_row = UpdateFor(rule);
  auto update = [&](int64_t g, const T* vc, const T* vn, const T* rc, const T* sg) {
    const int64_t row = (g - first) * H;
    update_row(rule, H, vc, vn, rc, sg, reg_o + row, avg_o + row, rule.compensated ? comp_o + row : nullptr);
  };
  // The trunk: its strategy, both players' reach; its forest roots' reach below.
  Scratch<T> tw;
  Tree<T> trunk;
  std::vector<T> chance;     // [R][L][H]: the boards' root values summed
  if (n1) {
    trunk.n = n1;
    trunk.R = 1;
    trunk.parent = trunk_parent.typed_data();
    trunk.lane_slot = trunk_lane_slot.typed_data();
    trunk.F = trunk_fold_node.element_count();
    trunk.fold_node = trunk_fold_node.typed_data();
    trunk.fold_payoff = trunk_fold_payoff.typed_data();
    tw.sig.resize(static_cast<size_t>((t0 + t1) * H));
    std::vector<const T*> reg(static_cast<size_t>(t0 + t1));
    for (int64_t j = 0; j < t0; ++j) reg[j] = regret_row(j);
    for (int64_t j = 0; j < t1; ++j) reg[t0 + j] = regret_row(split + j);
    Match(reg.data(), t0, trunk_slot_node.typed_data(), H, tw.sig.data(), tw.total);
    Match(reg.data() + t0, t1, trunk_slot_node.typed_data() + t0, H, tw.sig.data() + t0 * H, tw.total);
    for (int64_t j = 0; j < t0; ++j) lock(j, tw.sig.data() + j * H);
    for (int64_t j = 0; j < t1; ++j) lock(split + j, tw.sig.data() + (t0 + j) * H);
    tw.rows.assign(static_cast<size_t>(S + 1), nullptr);     // by global slot
    for (int64_t j = 0; j < t0; ++j) tw.rows[j] = tw.sig.data() + j * H;
    for (int64_t j = 0; j < t1; ++j) tw.rows[split + j] = tw.sig.data() + (t0 + j) * H;
    tw.reach.resize(static_cast<size_t>(n1 * 2 * H));
    Forward(trunk, tw.rows, H, [&](int64_t, int p) { return weights.typed_data() + p * H; }, tw.reach.data());
    chance.assign(static_cast<size_t>(B * R * L * H), T(0));
  }
  const int32_t* chance_node = root_chance.typed_data();
  ForBoards<T>(B, [&](int64_t b, Scratch<T>& w) {
    Tree<T> t = ForestOf<T>(parent, lane_slot, fold_node, fold_payoff.typed_data(), showdown_node,
                            showdown_stake.typed_data(), sorted, cards, index, live.typed_data(), dealt != 0,
                            n1 ? R : 1, H, b);
    // This board's strategy: both players' slots matched from their regrets.
    w.sig.resize(static_cast<size_t>((s0 + s1) * H));
    std::vector<const T*> reg(static_cast<size_t>(s0 + s1));
    for (int64_t j = 0; j < s0; ++j) reg[j] = regret_row(t0 + b * s0 + j);
    for (int64_t j = 0; j < s1; ++j) reg[s0 + j] = regret_row(split + t1 + b * s1 + j);
    Match(reg.data(), s0, slot_node.typed_data(), H, w.sig.data(), w.total);
    Match(reg.data() + s0, s1, slot_node.typed_data() + s0, H, w.sig.data() + s0 * H, w.total);
    for (int64_t j = 0; j < s0; ++j) lock(t0 + b * s0 + j, w.sig.data() + j * H);
    for (int64_t j = 0; j < s1; ++j) lock(split + t1 + b * s1 + j, w.sig.data() + (s0 + j) * H);
    w.rows.assign(static_cast<size_t>(s0 + s1 + 1), nullptr);
    for (int64_t j = 0; j < s0 + s1; ++j) w.rows[j] = w.sig.data() + j * H;
    w.reach.resize(static_cast<size_t>(t.n * 2 * H));
    w.vals.assign(static_cast<size_t>(t.n * L * H), T(0));
    if (n1) {
      Forward(t, w.rows, H, [&](int64_t r, int p) { return tw.reach.data() + (chance_node[r] * 2 + p) * H; },
              w.reach.data());
    } else {
      Forward(t, w.rows, H, [&](int64_t, int p) { return weights.typed_data() + p * H; }, w.reach.data());
    }
    Terminals(t, hs, lanes, L, inv_z, w.reach.data(), w.vals.data(), w);
    Backward(t, w.rows, H, lanes, L, w.vals.data());
    if (n1) std::memcpy(chance.data() + b * R * L * H, w.vals.data(), sizeof(T) * R * L * H);
    for (int i = 0; i < L; ++i) {
      const int p = lanes[i];
      const int64_t lo = p == 0 ? 0 : s0, size = p == 0 ? s0 : s1;
      const int64_t g0 = p == 0 ? t0 + b * s0 : split + t1 + b * s1;
      for (int64_t j = 0; j < size; ++j) {
        const int64_t slot = lo + j;
        update(g0 + j, w.vals.data() + (slot_child.typed_data()[slot] * L + i) * H,
               w.vals.data() + (slot_node.typed_data()[slot] * L + i) * H,
               w.reach.data() + (slot_node.typed_data()[slot] * 2 + p) * H, w.rows[slot]);
      }
    }
  });
  if (!n1) return ffi::Error::Success();
  // The trunk backward: the boards' root values at its chance nodes (summed in board order),
  // its folds' values, then its own slots' updates.
  tw.vals.assign(static_cast<size_t>(n1 * L * H), T(0));
  for (int64_t r = 0; r < R; ++r) {
    for (int i = 0; i < L; ++i) {
      T* dst = tw.vals.data() + (chance_node[r] * L + i) * H;
      for (int64_t b = 0; b < B; ++b) {
        const T* src = chance.data() + ((b * R + r) * L + i) * H;
        for (int64_t h = 0; h < H; ++h) dst[h] += src[h];
      }
    }
  }
  Terminals(trunk, hs, lanes, L, inv_z, tw.reach.data(), tw.vals.data(), tw);
  Backward(trunk, tw.rows, H, lanes, L, tw.vals.data());
  for (int i = 0; i < L; ++i) {
    const int p = lanes[i];
    const int64_t lo = p == 0 ? 0 : t0, size = p == 0 ? t0 : t1, g0 = p == 0 ? 0 : split;
    for (int64_t j = 0; j < size; ++j) {
      const int64_t slot = lo + j;
      update(g0 + j, tw.vals.data() + (trunk_slot_child.typed_data()[slot] * L + i) * H,
             tw.vals.data() + (trunk_slot_node.typed_data()[slot] * L + i) * H,
             tw.reach.data() + (trunk_slot_node.typed_data()[slot] * 2 + p) * H, tw.rows[g0 + j]);
    }
  }
  return ffi::Error::Success();
}

}  // namespace

#define CFRJAX_F(DT) .Arg<ffi::Buffer<DT>>()
#define CFRJAX_I32 .Arg<ffi::Buffer<ffi::S32>>()
#define CFRJAX_I64(NAME) .Attr<int64_t>(NAME)

#define CFRJAX_FOREST(NAME, DT)                                                                                  \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(                                                                                 \
      NAME, Forest<DT>,                                                                                          \
      ffi::Ffi::Bind() CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) \
          CFRJAX_F(DT) CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32     \
              CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I64("lanes") CFRJAX_I64("off0")                  \
                  CFRJAX_I64("off1") CFRJAX_I64("roff0") CFRJAX_I64("roff1") CFRJAX_I64("s0") CFRJAX_I64("s1")    \
                      CFRJAX_I64("t0") CFRJAX_I64("t1") CFRJAX_I64("dealt")                                       \
          .Ret<ffi::Buffer<DT>>()                                                                                \
          .Ret<ffi::Buffer<DT>>()                                                                                \
          .Ret<ffi::Buffer<DT>>());

#define CFRJAX_HALF(NAME, DT)                                                                                    \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(                                                                                 \
      NAME, Half<DT>,                                                                                            \
      ffi::Ffi::Bind() CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) \
          CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) CFRJAX_F(DT) .Arg<ffi::Buffer<ffi::PRED>>()        \
              CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32   \
                  CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32 CFRJAX_I32         \
                      CFRJAX_I64("lanes") CFRJAX_I64("split") CFRJAX_I64("s0") CFRJAX_I64("s1") CFRJAX_I64("t0")  \
                          CFRJAX_I64("t1") CFRJAX_I64("dealt") CFRJAX_I64("clamp") CFRJAX_I64("compensated")      \
                              CFRJAX_I64("unweighted")                                                            \
          .Ret<ffi::Buffer<DT>>()                                                                                \
          .Ret<ffi::Buffer<DT>>()                                                                                \
          .Ret<ffi::Buffer<DT>>());

CFRJAX_FOREST(CfrjaxForestF32, ffi::F32)
CFRJAX_FOREST(CfrjaxForestF64, ffi::F64)
CFRJAX_HALF(CfrjaxHalfF32, ffi::F32)
CFRJAX_HALF(CfrjaxHalfF64, ffi::F64)
