// tensorflow-text's FastWordpieceTokenizer in ai.tf2ir.text: FastWordpieceTokenize and
// FastWordpieceDetokenize, the native twins of the numpy kernels of opp/tftext_fastwordpiece.py
// (the reference: it matches TF-text), byte for byte.
//
// The model is the node's `model` attribute, the FastWordpieceTokenizerConfig flatbuffer's bytes as
// INTS (as the lowering writes it; a uint8 tensor is read too), read once when the kernel is made. Every offset read from
// it is checked against the buffer; a model that cannot be read fails each run with a message
// (kernel creation never fails). Indices into the model's own tables are taken as the Python
// kernel takes them (a node or leaf outside the trie is no node, a pop range past the pool is cut
// at its end, a piece past its word is cut at the word's end), and the failure transitions of one
// text are bounded (4 per byte + 16), so a malformed model gives an error, never a crash, an
// out-of-bounds read or an endless loop.
//
// UTF-8 is decoded as ICU's U8_NEXT (an ill-formed sequence is one non-character spanning its
// maximal valid prefix); the character classes are punct_table.h, generated from the Python
// kernel's own definitions by tools/gen_punct_table.py.
#include "common.h"
#include "punct_table.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace tf2ir_kernels {
namespace {

constexpr const char* TEXT_DOMAIN = "ai.tf2ir.text";   // opp/tftext_normalize.py DOMAIN
constexpr ONNXTensorElementDataType INT64 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
constexpr ONNXTensorElementDataType INT32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
constexpr uint32_t NULL_NODE = 0xFFFFFFFFu;   // the model's "no failure link"
constexpr int64_t NONE = -1;                  // the Python kernel's None: no node

template <typename T>
void write_numbers(Ort::KernelContext& ctx, size_t index, const std::vector<T>& values) {
  Shape shape{static_cast<int64_t>(values.size())};
  T* out = ctx.GetOutput(index, shape.data(), shape.size()).GetTensorMutableData<T>();
  if (!values.empty()) std::memcpy(out, values.data(), values.size() * sizeof(T));
}

// -- character classes -----------------------------------------------------------------------------

struct Classes {
  Classes() {
    for (uint32_t c = 0; c < 128; ++c) ascii_punct[c] = search(c);
    for (uint32_t c : punct_table::WHITE_SPACE)
      if (c < 128) ascii_space[c] = true;
  }
  static bool search(uint32_t cp) {
    const auto* begin = std::begin(punct_table::PUNCT_OR_CJK);
    const auto* end = std::end(punct_table::PUNCT_OR_CJK);
    const auto* at = std::upper_bound(begin, end, cp, [](uint32_t c, const punct_table::Range& r) { return c < r.first; });
    return at != begin && cp <= (at - 1)->last;
  }
  bool punct_or_cjk(int64_t cp) const {
    if (cp < 0) return false;
    return cp < 128 ? ascii_punct[cp] : search(static_cast<uint32_t>(cp));
  }
  bool space(int64_t cp) const {
    if (cp < 0) return false;
    if (cp < 128) return ascii_space[cp];
    return std::binary_search(std::begin(punct_table::WHITE_SPACE), std::end(punct_table::WHITE_SPACE),
                              static_cast<uint32_t>(cp));
  }
  bool ascii_punct[128] = {};
  bool ascii_space[128] = {};
};

const Classes& classes() {
  static const Classes table;
  return table;
}

// ICU's U8_NEXT from s[i]: the code point (-1 for an ill-formed sequence) and the position after
// it (opp/tftext_fastwordpiece.py u8_next).
inline int64_t u8_next(const unsigned char* s, size_t i, size_t n, size_t& next) {
  const unsigned char lead = s[i++];
  if (lead < 0x80) {
    next = i;
    return lead;
  }
  size_t trail;
  int64_t cp;
  unsigned char lo = 0x80, hi = 0xBF;   // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    trail = 1, cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    trail = 2, cp = lead & 0x0F;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    trail = 3, cp = lead & 0x07;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    next = i;
    return -1;
  }
  for (size_t k = 0; k < trail; ++k) {
    const unsigned char b = i < n ? s[i] : 0;
    if (i >= n || (k == 0 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))) {
      next = i;
      return -1;
    }
    cp = (cp << 6) | (b & 0x3F);
    ++i;
  }
  next = i;
  return cp;
}

// -- the model ----------------------------------------------------------------------------------------

struct Model {
  std::vector<uint32_t> trie, link, pops;
  std::vector<int32_t> pool, precomputed;
  uint32_t suffix_root = 0, punct_node = 0;
  int32_t max_bytes = 0, unk_id = 0;
  std::string suffix, unk;
  bool end_to_end = false, detokenize = false;
  std::vector<std::string> vocab;
  std::vector<uint8_t> is_suffix;
};

// A FastWordpieceTokenizerConfig flatbuffer, every read bounds-checked (std::runtime_error where
// the buffer does not hold what a field says).
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : b_(data), n_(size) {}

  uint64_t u32(uint64_t at) const {
    need(at, 4);
    return static_cast<uint64_t>(b_[at]) | static_cast<uint64_t>(b_[at + 1]) << 8 |
           static_cast<uint64_t>(b_[at + 2]) << 16 | static_cast<uint64_t>(b_[at + 3]) << 24;
  }
  uint64_t u16(uint64_t at) const {
    need(at, 2);
    return static_cast<uint64_t>(b_[at]) | static_cast<uint64_t>(b_[at + 1]) << 8;
  }
  uint8_t u8(uint64_t at) const {
    need(at, 1);
    return b_[at];
  }

  // The absolute positions of the root table's first `count` fields (0: absent).
  std::vector<uint64_t> fields(size_t count) const {
    if (n_ < 8) throw std::runtime_error("the model is shorter than a flatbuffer");
    const uint64_t table = u32(0);
    const int64_t back = static_cast<int32_t>(static_cast<uint32_t>(u32(table)));
    const int64_t vtable = static_cast<int64_t>(table) - back;
    if (vtable < 0 || static_cast<uint64_t>(vtable) >= n_) throw std::runtime_error("the vtable is outside the model");
    const uint64_t size = u16(static_cast<uint64_t>(vtable));
    std::vector<uint64_t> out;
    for (size_t i = 0; i < count; ++i) {
      const uint64_t at = 4 + 2 * i;
      const uint64_t offset = at < size ? u16(static_cast<uint64_t>(vtable) + at) : 0;
      out.push_back(offset ? table + offset : 0);
    }
    return out;
  }

  // The vector field `field` points to: its first item's position and its length.
  uint64_t vector(uint64_t field, uint64_t item, uint64_t& length) const {
    length = 0;
    if (!field) return 0;
    const uint64_t start = field + u32(field);
    length = u32(start);
    need(start + 4, length * item);
    return start + 4;
  }
  std::string string(uint64_t field) const {
    if (!field) return {};
    const uint64_t start = field + u32(field);
    const uint64_t length = u32(start);
    if (start + 4 + length > n_) throw std::runtime_error("a string runs past the end of the model");
    return std::string(reinterpret_cast<const char*>(b_ + start + 4), length);
  }
  uint32_t scalar32(uint64_t field) const { return field ? static_cast<uint32_t>(u32(field)) : 0; }

  template <typename T>
  std::vector<T> items32(uint64_t field) const {
    uint64_t length;
    const uint64_t at = vector(field, 4, length);
    std::vector<T> out(length);
    for (uint64_t i = 0; i < length; ++i) out[i] = static_cast<T>(static_cast<uint32_t>(u32(at + 4 * i)));
    return out;
  }

 private:
  void need(uint64_t at, uint64_t size) const {
    if (at > n_ || size > n_ - at) throw std::runtime_error("a field runs past the end of the model");
  }
  const uint8_t* b_;
  uint64_t n_;
};

// The model's fields, as opp/tftext_fastwordpiece.py read_model (an error message where malformed).
std::string read_model(const uint8_t* data, size_t size, Model& m) {
  try {
    Reader r(data, size);
    const std::vector<uint64_t> f = r.fields(14);
    m.trie = r.items32<uint32_t>(f[0]);
    uint64_t length;
    const uint64_t links = r.vector(f[1], 8, length);   // (failure link, failure pops) pairs
    m.link.resize(length);
    m.pops.resize(length);
    for (uint64_t i = 0; i < length; ++i) {
      m.link[i] = static_cast<uint32_t>(r.u32(links + 8 * i));
      m.pops[i] = static_cast<uint32_t>(r.u32(links + 8 * i + 4));
    }
    m.pool = r.items32<int32_t>(f[2]);
    m.suffix_root = r.scalar32(f[3]);
    m.max_bytes = static_cast<int32_t>(r.scalar32(f[4]));
    m.suffix = r.string(f[5]);
    m.unk = r.string(f[6]);
    m.unk_id = static_cast<int32_t>(r.scalar32(f[7]));
    m.precomputed = r.items32<int32_t>(f[8]);
    m.punct_node = r.scalar32(f[9]);
    m.end_to_end = f[10] && r.u8(f[10]);
    m.detokenize = f[11] && r.u8(f[11]);
    const uint64_t words = r.vector(f[12], 4, length);
    m.vocab.resize(length);
    for (uint64_t i = 0; i < length; ++i) m.vocab[i] = r.string(words + 4 * i);
    const uint64_t flags = r.vector(f[13], 1, length);
    m.is_suffix.resize(length);
    for (uint64_t i = 0; i < length; ++i) m.is_suffix[i] = r.u8(flags + i);
  } catch (const std::exception& e) {
    return std::string("not a FastWordpieceTokenizerConfig flatbuffer (") + e.what() + ")";
  }
  if (m.trie.empty()) return "the model has no trie";
  return {};
}

// The `model` attribute read into m; an error message where it cannot be. The lowering writes the
// flatbuffer as INTS (one byte each); a 1-D uint8 TENSOR is read too.
std::string model_attribute(const OrtKernelInfo* info, Model& m) {
  std::vector<uint8_t> bytes;
  bool ints = false, read = false;
  try {
    const std::vector<int64_t> values = Ort::ConstKernelInfo(info).GetAttributes<int64_t>("model");
    read = true;
    ints = !values.empty();   // (onnxruntime reads another type's attribute as no INTS)
    bytes.reserve(values.size());
    for (int64_t v : values) {
      if (v < 0 || v > 255) return "the model attribute 'model' holds " + std::to_string(v) + ", not a byte";
      bytes.push_back(static_cast<uint8_t>(v));
    }
  } catch (const std::exception&) {
  }
  if (!ints) {   // a uint8 tensor?
    try {
      Ort::AllocatorWithDefaultOptions allocator;
      Ort::Value model = Ort::ConstKernelInfo(info).GetTensorAttribute("model", allocator);
      auto type = model.GetTensorTypeAndShapeInfo();
      if (type.GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8)
        return "the model attribute 'model' is neither INTS nor a uint8 tensor";
      const size_t n = type.GetElementCount();
      const uint8_t* data = n ? model.GetTensorData<uint8_t>() : nullptr;
      if (n) bytes.assign(data, data + n);
    } catch (const std::exception&) {
      if (!read) return "the model attribute 'model' (INTS, the flatbuffer's bytes) is missing";
    }
  }
  const std::string error = read_model(bytes.data(), bytes.size(), m);
  return error.empty() ? error : "the WordPiece model attribute 'model' is " + error;
}

// -- the linear WordPiece tokenizer over the model ---------------------------------------------------

struct Piece {
  int64_t id, begin, end;   // the token id, its byte offsets
  size_t from, size;        // the input bytes it shows (unless unknown): in.chars[from, from + size)
  bool unknown, suffix;     // shown as the unknown token; the suffix indicator first
};

// One text's tokenization (opp/tftext_fastwordpiece.py Tokenizer), its pieces appended to `out`.
class Tokenizer {
 public:
  // `origin`: where the text starts in the buffer the pieces' `from` index
  Tokenizer(const Model& m, const unsigned char* text, size_t n, size_t origin, std::vector<Piece>& out)
      : m_(m), s_(text), n_(n), origin_(origin), out_(out), kept_(out.size()),
        budget_(4 * static_cast<int64_t>(n) + 16) {}

  void run() { m_.end_to_end ? text() : word(); }

 private:
  static uint64_t offset(uint32_t unit) { return static_cast<uint64_t>(unit >> 10) << ((unit & 0x200) >> 6); }

  // darts-clone trie
  int64_t step(int64_t from, const unsigned char* piece, size_t k) const {
    const uint64_t size = m_.trie.size();
    uint64_t node = static_cast<uint64_t>(from);
    if (node >= size) return NONE;
    uint32_t unit = m_.trie[node];
    for (size_t i = 0; i < k; ++i) {
      node ^= offset(unit) ^ piece[i];
      if (node >= size) return NONE;
      unit = m_.trie[node];
      if ((unit & 0x800000FFu) != piece[i]) return NONE;
    }
    return static_cast<int64_t>(node);
  }

  int64_t data(int64_t from) const {
    const uint64_t size = m_.trie.size(), node = static_cast<uint64_t>(from);
    if (node >= size || !(m_.trie[node] & 0x100)) return NONE;
    const uint64_t leaf = node ^ offset(m_.trie[node]);
    return leaf < size ? static_cast<int64_t>(m_.trie[leaf] & 0x7FFFFFFFu) : NONE;
  }

  // A token of `value` at offset `at` in the word of `length` bytes starting at `start`.
  void append(uint32_t value, size_t length_of_word, int64_t start, int64_t& at) {
    const int64_t offset = at;
    const int64_t id = (value & 0x3FFFFF00u) >> 8;
    int64_t length = (value & 0xFFu) + 1;
    if (!offset && (value >> 30)) length += static_cast<int64_t>(m_.suffix.size());
    const uint64_t word = length_of_word;
    const uint64_t lo = std::min<uint64_t>(offset, word), hi = std::min<uint64_t>(offset + length, word);
    out_.push_back(Piece{id, start + offset, start + offset + length, origin_ + static_cast<size_t>(start) + lo, hi - lo,
                         id == m_.unk_id, offset != 0});
    at = offset + length;
  }

  // The failure transition from `node` (its pops appended), or NONE.
  int64_t follow(int64_t node, size_t word, int64_t start, int64_t& at) {
    if (--budget_ < 0)
      throw std::runtime_error("FastWordpieceTokenize: the model's failure links loop (a malformed model)");
    const uint64_t index = static_cast<uint64_t>(node);
    const uint32_t link = index < m_.link.size() ? m_.link[index] : NULL_NODE;
    const int64_t value = data(node);
    if (value != NONE) {
      append(static_cast<uint32_t>(value), word, start, at);
      return link;
    }
    if (link == NULL_NODE) return NONE;
    const uint32_t pops = m_.pops[index];
    const size_t first = pops >> 8, last = std::min(m_.pool.size(), first + (pops & 0xFFu) + 1);
    for (size_t i = first; i < last; ++i) append(static_cast<uint32_t>(m_.pool[i]), word, start, at);
    return link;
  }

  void unknown(int64_t start, int64_t size) {
    out_.resize(kept_);
    out_.push_back(Piece{m_.unk_id, start, start + size, 0, 0, true, false});
    ++kept_;
  }

  // Segment what the trie path to `node` holds (TF's HandleTheRemainingStringOnTriePath).
  void finish(size_t word, int64_t start, int64_t node, int64_t& at) {
    if (node == 0) return;
    if (node == static_cast<int64_t>(m_.suffix_root) && out_.size() == kept_) {
      const auto& pre = m_.precomputed;
      if (pre.size() == 1 && ((static_cast<uint32_t>(pre[0]) & 0x3FFFFF00u) >> 8) == static_cast<int64_t>(m_.unk_id)) {
        unknown(start, static_cast<int64_t>(word));
      } else {
        for (int32_t value : pre) append(static_cast<uint32_t>(value), word, start, at);
      }
      kept_ = out_.size();
      return;
    }
    while (node != static_cast<int64_t>(m_.suffix_root) && node != static_cast<int64_t>(m_.punct_node)) {
      node = follow(node, word, start, at);
      if (node == NONE) {
        unknown(start, static_cast<int64_t>(word));
        return;
      }
    }
    kept_ = out_.size();
  }

  void word() {
    if (n_ == 0) return;
    const int64_t size = static_cast<int64_t>(n_);
    if (m_.max_bytes >= 0 && m_.max_bytes < size) {
      unknown(0, size);
      return;
    }
    int64_t node = 0, at = 0;
    for (size_t i = 0; i < n_; ++i) {
      for (;;) {
        const int64_t moved = step(node, s_ + i, 1);
        if (moved != NONE) {
          node = moved;
          break;
        }
        node = follow(node, n_, 0, at);
        if (node == NONE) {
          unknown(0, size);
          return;
        }
      }
    }
    finish(n_, 0, node, at);
  }

  void text() {
    const Classes& c = classes();
    size_t pos = 0, next = 0;
    int64_t ch = -1, prev = -1;
    while (pos < n_) {
      int64_t node = 0, length = 0, at = 0;
      const size_t start = pos, rest = n_ - start;
      const int64_t begin = static_cast<int64_t>(start);
      while (pos < n_) {
        prev = ch;
        ch = u8_next(s_, pos, n_, next);
        if (length + static_cast<int64_t>(next - pos) > m_.max_bytes) break;
        int64_t moved = step(node, s_ + pos, next - pos);
        while (moved == NONE) {
          const int64_t link = follow(node, rest, begin, at);
          if (link == NONE) break;
          node = link;
          moved = step(link, s_ + pos, next - pos);
        }
        if (moved == NONE) break;
        node = moved;
        length += static_cast<int64_t>(next - pos);
        pos = next;
      }
      if (pos >= n_) {
        finish(rest, begin, node, at);
        return;
      }
      const bool space = c.space(ch);
      if (space || c.punct_or_cjk(ch) || (pos && c.punct_or_cjk(prev))) {
        finish(pos - start, begin, node, at);
        if (space) pos = next;
        continue;
      }
      size_t end = pos = next;
      while (pos < n_) {
        size_t after;
        const int64_t cp = u8_next(s_, pos, n_, after);
        if (c.space(cp)) {
          pos = after;
          break;
        }
        if (c.punct_or_cjk(cp)) break;
        end = pos = after;
      }
      unknown(begin, static_cast<int64_t>(end - start));
    }
  }

  const Model& m_;
  const unsigned char* s_;
  size_t n_, origin_;
  std::vector<Piece>& out_;
  size_t kept_;      // pieces of finished words (TF's original_num_tokens)
  int64_t budget_;   // failure transitions left: each pops >= 1 byte of a valid model's input
};

struct FastWordpiece {
  explicit FastWordpiece(const OrtKernelInfo* info) { error = model_attribute(info, model); }

  Ort::Status Compute(Ort::KernelContext& ctx) const {
    if (!error.empty()) return fail(error);
    Strings in = read_strings(ctx, 0);
    std::vector<Piece> pieces;
    pieces.reserve(in.chars.size() / 4 + 16);
    std::vector<int64_t> splits{0};
    splits.reserve(in.views.size() + 1);
    for (std::string_view text : in.views) {
      const size_t origin = static_cast<size_t>(text.data() - in.chars.data());
      Tokenizer(model, reinterpret_cast<const unsigned char*>(text.data()), text.size(), origin, pieces).run();
      splits.push_back(static_cast<int64_t>(pieces.size()));
    }
    // The pieces, each followed by a NUL, in one buffer: one FillStringTensor call where no piece
    // holds a NUL (write_strings would copy them once more), byte by byte otherwise.
    std::string arena;
    std::vector<size_t> starts(pieces.size() + 1, 0);
    std::vector<int64_t> ids(pieces.size()), begins(pieces.size()), ends(pieces.size());
    arena.reserve(in.chars.size() + pieces.size() * (model.suffix.size() + 1) + 1);
    bool nul = std::memchr(model.suffix.data(), 0, model.suffix.size()) || std::memchr(model.unk.data(), 0, model.unk.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
      const Piece& p = pieces[i];
      starts[i] = arena.size();
      if (p.suffix) arena += model.suffix;
      if (p.unknown) {
        arena += model.unk;
      } else if (p.size) {
        const char* from = in.chars.data() + p.from;
        nul = nul || std::memchr(from, 0, p.size);
        arena.append(from, p.size);
      }
      arena.push_back('\0');
      ids[i] = p.id;
      begins[i] = p.begin;
      ends[i] = p.end;
    }
    starts[pieces.size()] = arena.size();
    const Shape shape{static_cast<int64_t>(pieces.size())};
    Ort::UnownedValue out = ctx.GetOutput(0, shape.data(), shape.size());
    if (!nul && !pieces.empty()) {
      std::vector<const char*> texts(pieces.size());
      for (size_t i = 0; i < pieces.size(); ++i) texts[i] = arena.data() + starts[i];
      out.FillStringTensor(texts.data(), texts.size());
    } else {
      for (size_t i = 0; i < pieces.size(); ++i) {
        const size_t size = starts[i + 1] - starts[i] - 1;
        char* at = out.GetResizedStringTensorElementBuffer(i, size);
        if (size) std::memcpy(at, arena.data() + starts[i], size);
      }
    }
    write_numbers(ctx, 1, ids);
    write_numbers(ctx, 2, splits);
    write_numbers(ctx, 3, begins);
    write_numbers(ctx, 4, ends);
    return Ort::Status(nullptr);
  }

  Model model;
  std::string error;
};

// -- FastWordpieceDetokenize ---------------------------------------------------------------------------

struct FastDetokenize {
  explicit FastDetokenize(const OrtKernelInfo* info) { error = model_attribute(info, model); }

  Ort::Status Compute(Ort::KernelContext& ctx) const {
    if (!error.empty()) return fail(error);
    Ort::ConstValue values_in = ctx.GetInput(0), splits_in = ctx.GetInput(1);
    const size_t count = values_in.GetTensorTypeAndShapeInfo().GetElementCount();
    const size_t rows = splits_in.GetTensorTypeAndShapeInfo().GetElementCount();
    const int32_t* values = count ? values_in.GetTensorData<int32_t>() : nullptr;
    const int64_t* splits = rows ? splits_in.GetTensorData<int64_t>() : nullptr;
    if (rows) {
      bool bad = splits[0] < 0 || splits[rows - 1] > static_cast<int64_t>(count);
      for (size_t i = 1; i < rows && !bad; ++i) bad = splits[i] < splits[i - 1];
      if (bad) return fail("FastWordpieceDetokenize: row splits do not partition the ids");
    }
    const size_t known = std::min(model.vocab.size(), model.is_suffix.size());
    const size_t n = rows ? rows - 1 : 0;
    std::string arena, word;
    std::vector<size_t> starts{0};
    for (size_t r = 0; r < n; ++r) {
      size_t words = 0, parts = 0;
      word.clear();
      auto close = [&]() {
        if (words++) arena.push_back(' ');
        arena += word;
        word.clear();
        parts = 0;
      };
      for (int64_t k = splits[r]; k < splits[r + 1]; ++k) {
        const int32_t token = values[k];
        if (token < 0 || static_cast<size_t>(token) >= known)
          return fail("FastWordpieceDetokenize: id " + std::to_string(token) + " is outside the vocabulary of " +
                      std::to_string(model.vocab.size()) + " tokens");
        const bool suffix = model.is_suffix[token] != 0;
        if (parts && !suffix) close();
        if (!parts && suffix) word += model.suffix, ++parts;
        word += model.vocab[token];
        ++parts;
      }
      if (parts) close();
      starts.push_back(arena.size());
    }
    write_strings(ctx, 0, arena, starts);
    return Ort::Status(nullptr);
  }

  Model model;
  std::string error;
};

}  // namespace

void add_fastwordpiece_ops(tf2ir::NativeOps& ops) {
  // made once per process and never freed (kernels.h): sessions may use them until it ends
  ops.add(TEXT_DOMAIN, new Op<FastWordpiece>("FastWordpieceTokenize", {STRING}, {STRING, INT64, INT64, INT64, INT64}));
  ops.add(TEXT_DOMAIN, new Op<FastDetokenize>("FastWordpieceDetokenize", {INT32, INT64}, {STRING}));
}

}  // namespace tf2ir_kernels
