// The sorted-showdown tables of a batch of boards, built on the host (cfrjax/public/terminals.py,
// `showdown_tables`, whose NumPy form this equals entry for entry; tested). A plain C function
// called through ctypes at build time, not an XLA handler: per board one sort of the hands by
// (strength, hand), then each card's hands in that order and the runs of equal strength, in
// one pass each, where NumPy needs some fifty passes over memory.
//
// Inputs: strength [B, H] (int32, higher wins), hand_cards [H, 2] (card ids < C), card_hands
// [C, M] (the hands holding each card, padded with H). Outputs (int32, C order): sorted [B, H]
// (hands by ascending strength, ties by hand), card_sorted [B, C, M] (each card's hands in that
// order, padding H last), index [B, H, 6] (lt, le, H + 1 + c1 (M + 1) + lt1, ... + le1, the same
// for c2: counts of weaker / not stronger hands, in all and among each card's hands).
// Returns 0, or 1 where hand_cards and card_hands disagree (a card holding other hands: nothing usable).

#include <algorithm>
#include <cstdint>
#include <vector>

extern "C" int cfrjax_showdown_tables(const int32_t* strength, int64_t B, int64_t H, const int32_t* hand_cards,
                                      const int32_t* card_hands, int64_t C, int64_t M, int32_t* sorted,
                                      int32_t* card_sorted, int32_t* index) {
  std::vector<int32_t> count(C, 0);
  for (int64_t i = 0; i < C * M; ++i) {
    if (card_hands[i] < H) ++count[i / M];
  }
  std::vector<int32_t> fill(C), lt(H), le(H), tmp(H);
  std::vector<uint32_t> value(H);
  for (int64_t b = 0; b < B; ++b) {
    const int32_t* s = strength + b * H;
    int32_t* order = sorted + b * H;
    int32_t* cs = card_sorted + b * C * M;
    int32_t* ix = index + b * H * 6;
    // Stable LSD radix sort of the hands (in hand order) by strength, 8 bits a pass over the
    // bits the board's strengths span: ties stay in hand order.
    int32_t lo = s[0], hi = s[0];
    for (int64_t h = 0; h < H; ++h) {
      lo = std::min(lo, s[h]);
      hi = std::max(hi, s[h]);
    }
    for (int64_t h = 0; h < H; ++h) {
      value[h] = static_cast<uint32_t>(static_cast<int64_t>(s[h]) - lo);
      order[h] = static_cast<int32_t>(h);
    }
    const uint32_t span = static_cast<uint32_t>(static_cast<int64_t>(hi) - lo);
    int32_t* src = order;
    int32_t* dst = tmp.data();
    for (int shift = 0; shift < 32 && (span >> shift) != 0; shift += 8) {
      int32_t bucket[257] = {0};
      for (int64_t i = 0; i < H; ++i) ++bucket[((value[src[i]] >> shift) & 255) + 1];
      for (int d = 0; d < 256; ++d) bucket[d + 1] += bucket[d];
      for (int64_t i = 0; i < H; ++i) dst[bucket[(value[src[i]] >> shift) & 255]++] = src[i];
      std::swap(src, dst);
    }
    if (src != order) std::copy(src, src + H, order);
    // Runs of equal strength: lt = the run's first position, le = one past its last.
    for (int64_t i = 0; i < H;) {
      int64_t j = i + 1;
      while (j < H && s[order[j]] == s[order[i]]) ++j;
      for (int64_t k = i; k < j; ++k) {
        lt[order[k]] = static_cast<int32_t>(i);
        le[order[k]] = static_cast<int32_t>(j);
      }
      i = j;
    }
    // Each card's hands in that order.
    std::fill(fill.begin(), fill.end(), 0);
    for (int64_t i = 0; i < C * M; ++i) cs[i] = static_cast<int32_t>(H);
    for (int64_t i = 0; i < H; ++i) {
      const int32_t h = order[i];
      for (int k = 0; k < 2; ++k) {
        const int32_t c = hand_cards[2 * h + k];
        if (c < 0 || c >= C || fill[c] >= count[c]) return 1;
        cs[c * M + fill[c]++] = h;
      }
    }
    for (int64_t h = 0; h < H; ++h) {
      ix[6 * h] = lt[h];
      ix[6 * h + 1] = le[h];
    }
    // Runs of equal strength inside each card's list (the same runs, cut by the card).
    for (int64_t c = 0; c < C; ++c) {
      const int32_t* list = cs + c * M;
      const int32_t n = fill[c];
      const int32_t base = static_cast<int32_t>(H + 1 + c * (M + 1));
      for (int32_t i = 0; i < n;) {
        int32_t j = i + 1;
        while (j < n && lt[list[j]] == lt[list[i]]) ++j;
        for (int32_t k = i; k < j; ++k) {
          const int32_t h = list[k];
          const int second = hand_cards[2 * h + 1] == c ? 1 : 0;
          ix[6 * h + 2 + 2 * second] = base + i;
          ix[6 * h + 3 + 2 * second] = base + j;
        }
        i = j;
      }
    }
  }
  return 0;
}
