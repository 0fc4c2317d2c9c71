// The tensorflow-text kernels of ai.tf2ir.text: WordpieceTokenize, FastBertNormalize and
// WhitespaceTokenize, the native twins of the numpy kernels of opp/tftext_wordpiece.py,
// opp/tftext_normalize.py and opp/tftext_tokenize.py (the reference: they match TF-text), byte
// for byte. Strings are bytes: read by offsets, written with lengths (embedded NULs kept).
//
// Characters are read as those Python kernels read them: a well-formed UTF-8 sequence is one
// character, any other byte is a character of its own (Python's surrogateescape decoding; the
// code point it stands for is U+DC80..U+DCFF, as the Python kernels see it) — except
// WordpieceTokenize, whose characters are ICU's U8_NEXT steps (opp/tftext_wordpiece.py char_ends).
//
// Attributes as the lowerings write them: WordpieceTokenize's vocabulary is a string TENSOR
// attribute (a STRINGS attribute has no reader in onnxruntime's C API), the FastBertNormalizer
// trie and pool and the whitespace code points are INTS. A node without them (or with them
// unreadable) fails when it runs, with a message naming the attribute; no exception leaves a
// kernel, and kernel creation never fails.
#include "common.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <unordered_set>
#include <vector>

namespace tf2ir_kernels {
namespace {

constexpr const char* TEXT_DOMAIN = "ai.tf2ir.text";   // opp/tftext_normalize.py DOMAIN
constexpr ONNXTensorElementDataType INT64 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
constexpr ONNXTensorElementDataType INT32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;

template <typename T>
void write_numbers(Ort::KernelContext& ctx, size_t index, const std::vector<T>& values) {
  Shape shape{static_cast<int64_t>(values.size())};
  T* out = ctx.GetOutput(index, shape.data(), shape.size()).GetTensorMutableData<T>();
  if (!values.empty()) std::memcpy(out, values.data(), values.size() * sizeof(T));
}

// INTS attribute `name`; false where the node has none (or it is not INTS).
bool ints_attribute(const OrtKernelInfo* info, const char* name, std::vector<int64_t>& out) {
  try {
    out = Ort::ConstKernelInfo(info).GetAttributes<int64_t>(name);
    return true;
  } catch (const std::exception&) {
    out.clear();
    return false;
  }
}

// A well-formed UTF-8 sequence's length at s[i] (Python's strict decoder), 0 where there is none.
size_t utf8_length(const unsigned char* s, size_t i, size_t n) {
  const unsigned char b = s[i];
  if (b < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;   // the allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + need >= n) return 0;   // too few bytes left
  if (s[i + 1] < lo || s[i + 1] > hi) return 0;
  for (size_t k = 2; k <= need; ++k)
    if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
  return need + 1;
}

// The next character at s[i]: its byte length and code point (an ill-formed byte: 1 and
// U+DC00 + the byte, Python's surrogateescape).
inline size_t next_char(const unsigned char* s, size_t i, size_t n, uint32_t& cp) {
  const size_t size = utf8_length(s, i, n);
  switch (size) {
    case 1: cp = s[i]; return 1;
    case 2: cp = ((s[i] & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu); return 2;
    case 3: cp = ((s[i] & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu); return 3;
    case 4:
      cp = ((s[i] & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
      return 4;
    default: cp = 0xDC00u + s[i]; return 1;
  }
}

// -- WordpieceTokenize -----------------------------------------------------------------------------

// ICU's U8_NEXT step from data[i] (opp/tftext_wordpiece.py char_ends): the lead byte says the
// length; where the continuation bytes fall short, one byte.
inline size_t u8_next(const unsigned char* s, size_t i, size_t n) {
  const unsigned char lead = s[i];
  const size_t size = lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  size_t j = i + 1;
  const size_t stop = std::min(i + size, n);
  while (j < stop && s[j] >= 0x80 && s[j] < 0xC0) ++j;
  return j - i == size ? j : i + 1;
}

struct Wordpiece {
  explicit Wordpiece(const OrtKernelInfo* info)
      : suffix(tf2ir::attribute<std::string>(info, "suffix_indicator", "##")),
        unknown(tf2ir::attribute<std::string>(info, "unknown_token", "[UNK]")),
        max_bytes(tf2ir::attribute<int64_t>(info, "max_bytes_per_word", 100)),
        max_chars(tf2ir::attribute<int64_t>(info, "max_chars_per_token", 0)),
        use_unknown(tf2ir::attribute<int64_t>(info, "use_unknown_token", 1) != 0),
        split_unknown(tf2ir::attribute<int64_t>(info, "split_unknown_characters", 0) != 0),
        row_lengths(tf2ir::attribute<std::string>(info, "output_row_partition_type", "row_splits") == "row_lengths") {
    try {
      Ort::AllocatorWithDefaultOptions allocator;
      Ort::Value vocab = Ort::ConstKernelInfo(info).GetTensorAttribute("vocab", allocator);
      auto type = vocab.GetTensorTypeAndShapeInfo();
      if (type.GetElementType() != STRING) {
        error = "the vocabulary attribute 'vocab' is not a string tensor";
        return;
      }
      const size_t n = type.GetElementCount();
      if (n > 0) {
        const size_t total = vocab.GetStringTensorDataLength();
        std::vector<char> chars(total + 1);
        std::vector<size_t> offsets(n + 1);
        vocab.GetStringTensorContent(chars.data(), total, offsets.data(), n);
        offsets[n] = total;
        words.reserve(n);
        for (size_t i = 0; i < n; ++i) {
          words.emplace(chars.data() + offsets[i], offsets[i + 1] - offsets[i]);
          longest = std::max(longest, offsets[i + 1] - offsets[i]);
        }
      }
    } catch (const std::exception& e) {
      error = std::string("the vocabulary attribute 'vocab' (a string tensor) cannot be read: ") + e.what();
    }
  }

  bool contains(std::string& key, std::string_view prefix, std::string_view piece) const {
    if (prefix.size() + piece.size() > longest) return false;
    key.assign(prefix.data(), prefix.size());
    key.append(piece.data(), piece.size());
    return words.count(key) != 0;
  }

  // One token's pieces (offsets into the arena, start, limit), as opp/tftext_wordpiece.py wordpiece.
  void tokenize(std::string_view token, std::string& arena, std::vector<size_t>& starts, std::vector<int64_t>& begins,
                std::vector<int64_t>& limits, std::vector<size_t>& ends, std::string& key) const {
    const size_t first = begins.size();
    auto add = [&](std::string_view prefix, std::string_view text, size_t begin, size_t limit) {
      arena.append(prefix.data(), prefix.size());
      arena.append(text.data(), text.size());
      starts.push_back(arena.size());
      begins.push_back(static_cast<int64_t>(begin));
      limits.push_back(static_cast<int64_t>(limit));
    };
    auto whole = [&](size_t limit) {   // the token as one piece: the unknown token, or itself
      arena.resize(starts[first]);
      starts.resize(first + 1);
      begins.resize(first);
      limits.resize(first);
      add({}, use_unknown ? std::string_view(unknown) : token, 0, limit);
    };
    if (static_cast<int64_t>(token.size()) > max_bytes) {
      whole(use_unknown ? unknown.size() : token.size());
      return;
    }
    const auto* s = reinterpret_cast<const unsigned char*>(token.data());
    const size_t n = token.size();
    size_t start = 0;
    while (start < n) {
      ends.clear();
      for (size_t i = start; i < n && (max_chars <= 0 || static_cast<int64_t>(ends.size()) < max_chars);) {
        i = u8_next(s, i, n);
        ends.push_back(i);
      }
      const std::string_view prefix = start > 0 ? std::string_view(suffix) : std::string_view();
      bool matched = false;
      for (size_t k = ends.size(); k-- > 0;) {
        const std::string_view piece = token.substr(start, ends[k] - start);
        if (contains(key, prefix, piece)) {
          add(prefix, piece, start, ends[k]);
          start = ends[k];
          matched = true;
          break;
        }
      }
      if (!matched && split_unknown && !ends.empty()) {   // the first character alone
        add(prefix, use_unknown ? std::string_view(unknown) : token.substr(start, ends[0] - start), start, ends[0]);
        start = ends[0];
        matched = true;
      }
      if (!matched) {
        whole(n);
        return;
      }
    }
  }

  Ort::Status Compute(Ort::KernelContext& ctx) const {
    if (!error.empty()) return fail(error);
    Strings in = read_strings(ctx, 0);
    std::string arena, key;
    std::vector<size_t> starts{0}, ends;
    std::vector<int64_t> begins, limits, partition{0};
    if (row_lengths) partition.clear();
    for (std::string_view token : in.views) {
      const size_t before = begins.size();
      tokenize(token, arena, starts, begins, limits, ends, key);
      const int64_t count = static_cast<int64_t>(begins.size() - before);
      partition.push_back(row_lengths ? count : partition.back() + count);
    }
    write_strings(ctx, 0, arena, starts);
    write_numbers(ctx, 1, partition);
    write_numbers(ctx, 2, begins);
    write_numbers(ctx, 3, limits);
    return Ort::Status(nullptr);
  }

  std::string suffix, unknown;
  int64_t max_bytes, max_chars;
  bool use_unknown, split_unknown, row_lengths;
  std::unordered_set<std::string> words;
  size_t longest = 0;
  std::string error;
};

// -- FastBertNormalize -----------------------------------------------------------------------------

constexpr uint32_t DIFFERENT = 0x40000000;
constexpr uint32_t LENGTH_BITS = 6;

struct BertNormalize {
  explicit BertNormalize(const OrtKernelInfo* info)
      : data_zero(static_cast<uint32_t>(tf2ir::attribute<int64_t>(info, "data_zero", 0))),
        get_offsets(tf2ir::attribute<int64_t>(info, "get_offsets", 0) != 0) {
    std::vector<int64_t> values;
    if (!ints_attribute(info, "trie", values)) {
      error = "the trie attribute 'trie' (INTS) is missing";
      return;
    }
    units.reserve(values.size());
    for (int64_t v : values) units.push_back(static_cast<uint32_t>(v));
    if (ints_attribute(info, "pool", values))   // absent: an empty pool, as the Python kernel's
      for (int64_t v : values) pool.push_back(static_cast<char>(static_cast<uint8_t>(v)));
    for (unsigned c = 0; c < 128; ++c) {   // every ASCII character's mapping, once
      const char ch = static_cast<char>(c);
      ascii_changed[c] = mapping(std::string_view(&ch, 1), ascii[c]);
    }
  }

  static uint64_t offset(uint32_t unit) { return static_cast<uint64_t>(unit >> 10) << ((unit & 0x200) >> 6); }

  // The trie's value for `key` (darts-clone: opp/tftext_normalize.py DartsTrie), 0 where none.
  uint32_t lookup(std::string_view key) const {
    const uint64_t size = units.size();
    uint64_t node = 0;
    if (node >= size) return 0;
    uint32_t unit = units[0];
    for (unsigned char ch : key) {
      node ^= offset(unit) ^ ch;
      if (node >= size) return 0;
      unit = units[node];
      if ((unit & 0x800000FFu) != ch) return 0;
    }
    if (!(unit & 0x100)) return 0;
    const uint64_t leaf = node ^ offset(unit);
    return leaf < size ? units[leaf] & 0x7FFFFFFFu : 0;
  }

  // Whether the character `key` changes, and what into.
  bool mapping(std::string_view key, std::string_view& out) const {
    const uint32_t data = key[0] == '\0' ? data_zero : lookup(key);
    if (!(data & DIFFERENT)) return false;
    const size_t length = data & ((1u << LENGTH_BITS) - 1);
    const size_t at = (data & ((DIFFERENT - 1) ^ ((1u << LENGTH_BITS) - 1))) >> LENGTH_BITS;
    out = at >= pool.size() ? std::string_view() : std::string_view(pool).substr(at, length);
    return true;
  }

  Ort::Status Compute(Ort::KernelContext& ctx) const {
    if (!error.empty()) return fail(error);
    Strings in = read_strings(ctx, 0);
    std::string arena;
    std::vector<size_t> starts{0};
    std::vector<int64_t> offsets, splits{0};
    for (std::string_view text : in.views) {
      const auto* s = reinterpret_cast<const unsigned char*>(text.data());
      const size_t n = text.size();
      for (size_t i = 0; i < n;) {
        uint32_t cp;
        const size_t size = next_char(s, i, n, cp);
        std::string_view changed;
        const bool change = s[i] < 0x80 ? ascii_changed[s[i]] : mapping(text.substr(i, size), changed);
        if (change && s[i] < 0x80) changed = ascii[s[i]];
        if (!change) {
          arena.append(text.data() + i, size);
          if (get_offsets)
            for (size_t k = 0; k < size; ++k) offsets.push_back(static_cast<int64_t>(i + k));
        } else {
          arena.append(changed.data(), changed.size());
          if (get_offsets) offsets.insert(offsets.end(), changed.size(), static_cast<int64_t>(i));
        }
        i += size;
      }
      starts.push_back(arena.size());
      if (get_offsets) {
        offsets.push_back(static_cast<int64_t>(n));
        splits.push_back(static_cast<int64_t>(offsets.size()));
      }
    }
    if (!get_offsets) splits.assign(in.views.size() + 1, 0);
    write_strings(ctx, 0, arena, starts);
    write_numbers(ctx, 1, offsets);
    write_numbers(ctx, 2, splits);
    return Ort::Status(nullptr);
  }

  uint32_t data_zero;
  bool get_offsets;
  std::vector<uint32_t> units;
  std::string pool;
  bool ascii_changed[128] = {};
  std::string_view ascii[128];
  std::string error;
};

// -- WhitespaceTokenize ----------------------------------------------------------------------------

struct Whitespace {
  explicit Whitespace(const OrtKernelInfo* info) {
    std::vector<int64_t> codes;
    ints_attribute(info, "whitespace", codes);   // absent: no whitespace, as the Python kernel's
    for (int64_t c : codes) {
      if (c < 0 || c > 0x10FFFF) continue;
      if (c < 128) ascii[c] = true;
      else others.insert(static_cast<uint32_t>(c));
    }
  }

  bool is_space(uint32_t cp) const { return cp < 128 ? ascii[cp] : others.count(cp) != 0; }

  Ort::Status Compute(Ort::KernelContext& ctx) const {
    Strings in = read_strings(ctx, 0);
    std::string arena;
    std::vector<size_t> starts{0};
    std::vector<int64_t> splits{0};
    std::vector<int32_t> begins, ends;
    for (std::string_view text : in.views) {
      const auto* s = reinterpret_cast<const unsigned char*>(text.data());
      const size_t n = text.size();
      size_t token = 0;
      bool inside = false;
      for (size_t i = 0; i < n;) {
        uint32_t cp;
        const size_t size = next_char(s, i, n, cp);
        if (is_space(cp)) {
          if (inside) {   // ended by a whitespace character: TF's end is its last byte
            const size_t stop = i + size - 1;
            arena.append(text.data() + token, stop - token);
            starts.push_back(arena.size());
            begins.push_back(static_cast<int32_t>(token));
            ends.push_back(static_cast<int32_t>(stop));
            inside = false;
          }
        } else if (!inside) {
          token = i;
          inside = true;
        }
        i += size;
      }
      if (inside) {
        arena.append(text.data() + token, n - token);
        starts.push_back(arena.size());
        begins.push_back(static_cast<int32_t>(token));
        ends.push_back(static_cast<int32_t>(n));
      }
      splits.push_back(static_cast<int64_t>(begins.size()));
    }
    write_strings(ctx, 0, arena, starts);
    write_numbers(ctx, 1, splits);
    write_numbers(ctx, 2, begins);
    write_numbers(ctx, 3, ends);
    return Ort::Status(nullptr);
  }

  bool ascii[128] = {};
  std::unordered_set<uint32_t> others;
};

}  // namespace

void add_text_ops(tf2ir::NativeOps& ops) {
  // made once per process and never freed (kernels.h): sessions may use them until it ends
  ops.add(TEXT_DOMAIN, new Op<Wordpiece>("WordpieceTokenize", {STRING}, {STRING, INT64, INT64, INT64}));
  ops.add(TEXT_DOMAIN, new Op<BertNormalize>("FastBertNormalize", {STRING}, {STRING, INT64, INT64}));
  ops.add(TEXT_DOMAIN, new Op<Whitespace>("WhitespaceTokenize", {STRING}, {STRING, INT64, INT32, INT32}));
}

}  // namespace tf2ir_kernels
