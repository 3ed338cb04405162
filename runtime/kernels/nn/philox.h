// The counter-based generator of maia's device random kernels (dropout.h,
// random.h): a random word depends only on (key, counter), so a kernel's
// numbers do not depend on how its work is split over programs.
#pragma once

#include <cstdint>

namespace maia_nn {

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
/// 3", SC 2011): four 32-bit random words for counter (c0, c1) under key.
struct Philox4x32 {
  uint32_t word[4];

  Philox4x32(uint64_t key, uint64_t c0, uint64_t c1) {
    uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    uint32_t x[4] = {static_cast<uint32_t>(c0), static_cast<uint32_t>(c0 >> 32),
                     static_cast<uint32_t>(c1), static_cast<uint32_t>(c1 >> 32)};
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = uint64_t{0xD2511F53u} * x[0], p1 = uint64_t{0xCD9E8D57u} * x[2];
      const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
      const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
      x[0] = hi1 ^ x[1] ^ k0;
      x[1] = lo1;
      x[2] = hi0 ^ x[3] ^ k1;
      x[3] = lo0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    for (int i = 0; i < 4; ++i) word[i] = x[i];
  }
};

/// A uniform float in [0, 1) from the top 24 bits of a random word.
inline float uniform(uint32_t word) { return static_cast<float>(word >> 8) * 0x1p-24f; }

}  // namespace maia_nn
