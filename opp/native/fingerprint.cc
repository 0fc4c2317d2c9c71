// Fingerprint64 (farmhash's `na` Hash64, the function TF's StringToHashBucketFast and
// StaticVocabularyTable's out-of-vocabulary buckets use) and the StringToHashBucketFast kernel:
// the native twins of opp/fingerprint.py and opp/strings.py's string_to_hash_bucket_fast.
#include "kernels.h"

#include <cstring>

namespace tf2ir_kernels {
namespace {

constexpr uint64_t K0 = 0xC3A5C85C97CB3127ULL;
constexpr uint64_t K1 = 0xB492B66FBE98F273ULL;
constexpr uint64_t K2 = 0x9AE16A3B2F90404FULL;

inline uint64_t word(const char* p) {   // little-endian, as farmhash reads on x86 and arm
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t half(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t rotate(uint64_t v, int shift) { return shift == 0 ? v : (v >> shift) | (v << (64 - shift)); }
inline uint64_t shift_mix(uint64_t v) { return v ^ (v >> 47); }

inline uint64_t mix16(uint64_t u, uint64_t v, uint64_t mul) {
  uint64_t a = (u ^ v) * mul;
  a ^= a >> 47;
  uint64_t b = (v ^ a) * mul;
  b ^= b >> 47;
  return b * mul;
}

uint64_t upto16(const char* s, size_t n) {
  if (n >= 8) {
    uint64_t mul = K2 + n * 2;
    uint64_t a = word(s) + K2;
    uint64_t b = word(s + n - 8);
    uint64_t c = rotate(b, 37) * mul + a;
    uint64_t d = (rotate(a, 25) + b) * mul;
    return mix16(c, d, mul);
  }
  if (n >= 4) {
    uint64_t mul = K2 + n * 2;
    return mix16(n + (half(s) << 3), half(s + n - 4), mul);
  }
  if (n > 0) {
    uint8_t a = static_cast<uint8_t>(s[0]), b = static_cast<uint8_t>(s[n >> 1]),
            c = static_cast<uint8_t>(s[n - 1]);
    uint32_t y = static_cast<uint32_t>(a) + (static_cast<uint32_t>(b) << 8);
    uint32_t z = static_cast<uint32_t>(n) + (static_cast<uint32_t>(c) << 2);
    return shift_mix(y * K2 ^ z * K0) * K2;
  }
  return K2;
}

uint64_t upto32(const char* s, size_t n) {
  uint64_t mul = K2 + n * 2;
  uint64_t a = word(s) * K1;
  uint64_t b = word(s + 8);
  uint64_t c = word(s + n - 8) * mul;
  uint64_t d = word(s + n - 16) * K2;
  return mix16(rotate(a + b, 43) + rotate(c, 30) + d, a + rotate(b + K2, 18) + c, mul);
}

uint64_t upto64(const char* s, size_t n) {
  uint64_t mul = K2 + n * 2;
  uint64_t a = word(s) * K2;
  uint64_t b = word(s + 8);
  uint64_t c = word(s + n - 8) * mul;
  uint64_t d = word(s + n - 16) * K2;
  uint64_t y = rotate(a + b, 43) + rotate(c, 30) + d;
  uint64_t z = mix16(y, a + rotate(b + K2, 18) + c, mul);
  uint64_t e = word(s + 16) * mul;
  uint64_t f = word(s + 24);
  uint64_t g = (y + word(s + n - 32)) * mul;
  uint64_t h = (z + word(s + n - 24)) * mul;
  return mix16(rotate(e + f, 43) + rotate(g, 30) + h, e + rotate(f + a, 18) + g, mul);
}

struct Pair {
  uint64_t first, second;
};

inline Pair weak32(const char* s, uint64_t a, uint64_t b) {
  uint64_t w = word(s), x = word(s + 8), y = word(s + 16), z = word(s + 24);
  a += w;
  b = rotate(b + a + z, 21);
  uint64_t c = a;
  a += x + y;
  b += rotate(a, 44);
  return {a + z, b + c};
}

}  // namespace

uint64_t fingerprint64(const char* s, size_t n) {
  if (n <= 16) return upto16(s, n);
  if (n <= 32) return upto32(s, n);
  if (n <= 64) return upto64(s, n);
  const uint64_t seed = 81;
  uint64_t x = seed;
  uint64_t y = seed * K1 + 113;
  uint64_t z = shift_mix(y * K2 + 113) * K2;
  Pair v{0, 0}, w{0, 0};
  x = x * K2 + word(s);
  const size_t end = ((n - 1) / 64) * 64;
  const size_t last = end + ((n - 1) & 63) - 63;
  size_t at = 0;
  do {
    x = rotate(x + y + v.first + word(s + at + 8), 37) * K1;
    y = rotate(y + v.second + word(s + at + 48), 42) * K1;
    x ^= w.second;
    y += v.first + word(s + at + 40);
    z = rotate(z + w.first, 33) * K1;
    v = weak32(s + at, v.second * K1, x + w.first);
    w = weak32(s + at + 32, z + w.second, y + word(s + at + 16));
    std::swap(z, x);
    at += 64;
  } while (at != end);
  uint64_t mul = K1 + ((z & 0xFF) << 1);
  at = last;
  w.first += (n - 1) & 63;
  v.first += w.first;
  w.first += v.first;
  x = rotate(x + y + v.first + word(s + at + 8), 37) * mul;
  y = rotate(y + v.second + word(s + at + 48), 42) * mul;
  x ^= w.second * 9;
  y += v.first * 9 + word(s + at + 40);
  z = rotate(z + w.first, 33) * mul;
  v = weak32(s + at, v.second * mul, x + w.first);
  w = weak32(s + at + 32, z + w.second, y + word(s + at + 16));
  std::swap(z, x);
  return mix16(mix16(v.first, w.first, mul) + shift_mix(y) * K0 + z,
               mix16(v.second, w.second, mul) + x, mul);
}

namespace {

// StringToHashBucketFast: Fingerprint64 of each string's bytes modulo num_buckets.
struct HashBucket {
  HashBucket(const OrtApi*, const OrtKernelInfo* info)
      : buckets_(tf2ir::attribute<int64_t>(info, "num_buckets", 1)) {}

  Ort::Status Compute(const Ort::Custom::Tensor<std::string_view>& x, Ort::Custom::Tensor<int64_t>& y) {
    if (buckets_ < 1) return Ort::Status("num_buckets must be at least 1", ORT_INVALID_ARGUMENT);
    const auto& strings = x.Data();
    int64_t* out = y.Allocate(x.Shape());
    const uint64_t buckets = static_cast<uint64_t>(buckets_);
    for (size_t i = 0; i < strings.size(); ++i)
      out[i] = static_cast<int64_t>(fingerprint64(strings[i].data(), strings[i].size()) % buckets);
    return Ort::Status(nullptr);
  }

  int64_t buckets_;
};

}  // namespace

void add_hash_ops(tf2ir::NativeOps& ops) {
  ops.add(STRINGS_DOMAIN, Ort::Custom::CreateLiteCustomOp<HashBucket>("StringToHashBucketFast", CPU));
}

}  // namespace tf2ir_kernels
