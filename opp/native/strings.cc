// The string kernels of ai.tf2ir.strings: StringCase, StringSplitV2, StringJoin, Substr and
// StringEqual, the native twins of opp/strings.py's numpy kernels, with TF's semantics (and its
// errors) exactly. Strings are bytes: embedded NULs and invalid UTF-8 pass through as TF passes
// them (read by offsets, written with GetResizedStringTensorElementBuffer, never as C strings).
//
// The ops are CustomOpBase ops with status-returning kernels (not the lite API): StringJoin's
// inputs are variadic and the lite API reads those as C strings; Substr's pos and len are
// int32 or int64. No exception leaves a kernel: each becomes the failed status.
#include "common.h"

#include "case_table.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace tf2ir_kernels {
namespace {

// An int32 or int64 input as int64 values.
std::vector<int64_t> read_integers(Ort::KernelContext& ctx, size_t index, Shape& shape) {
  Ort::ConstValue value = ctx.GetInput(index);
  auto info = value.GetTensorTypeAndShapeInfo();
  shape = info.GetShape();
  const size_t n = info.GetElementCount();
  std::vector<int64_t> out(n);
  if (info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
    const int32_t* data = value.GetTensorData<int32_t>();
    for (size_t i = 0; i < n; ++i) out[i] = data[i];
  } else if (info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
    const int64_t* data = value.GetTensorData<int64_t>();
    std::copy(data, data + n, out.begin());
  } else {
    throw std::invalid_argument("pos and len must be int32 or int64");
  }
  return out;
}

// Numpy broadcasting of two shapes; false where they are incompatible.
bool broadcast(const Shape& a, const Shape& b, Shape& out) {
  const size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    int64_t x = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t y = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return false;
    out[k] = x == 1 ? y : x;
  }
  return true;
}

// The flat index into an operand of `shape` for each flat index of the broadcast `out` shape.
std::vector<size_t> broadcast_index(const Shape& shape, const Shape& out) {
  const size_t n = element_count(out), rank = out.size();
  std::vector<size_t> strides(rank, 0);
  size_t stride = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    size_t axis = shape.size() - 1 - k;
    if (shape[axis] != 1) strides[rank - 1 - k] = stride;
    stride *= static_cast<size_t>(shape[axis]);
  }
  std::vector<size_t> index(n, 0), counter(rank, 0);
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    index[i] = at;
    for (size_t k = rank; k-- > 0;) {   // odometer over the output's dimensions
      at += strides[k];
      if (++counter[k] < static_cast<size_t>(out[k])) break;
      at -= strides[k] * counter[k];
      counter[k] = 0;
    }
  }
  return index;
}

// -- StringCase ------------------------------------------------------------------------------------

constexpr uint32_t REPLACEMENT = 0xFFFD;

// UTF-8 to code points as ICU (and Python's "replace") decode: each maximal subpart of an
// ill-formed sequence becomes U+FFFD. Stops at the first NUL byte, as TF's C-string read does.
void decode_utf8(std::string_view s, std::vector<uint32_t>& out) {
  out.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    unsigned char b = p[i];
    if (b == 0) return;
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    }
    int need;
    uint32_t cp;
    unsigned char lo = 0x80, hi = 0xBF;   // the allowed range of the second byte
    if (b >= 0xC2 && b <= 0xDF) {
      need = 1, cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need = 2, cp = b & 0x0F;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      need = 3, cp = b & 0x07;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      out.push_back(REPLACEMENT);
      ++i;
      continue;
    }
    size_t j = i + 1;
    int got = 0;
    for (; got < need && j < n; ++got, ++j) {
      unsigned char c = p[j];
      if (got == 0 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) break;
      cp = (cp << 6) | (c & 0x3F);
    }
    out.push_back(got == need ? cp : REPLACEMENT);
    i = j;
  }
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

template <size_t N>
const case_table::Mapping* find_mapping(const case_table::Mapping (&table)[N], uint32_t cp) {
  const auto* end = table + N;
  const auto* at = std::lower_bound(table, end, cp,
                                    [](const case_table::Mapping& m, uint32_t c) { return m.code_point < c; });
  return at != end && at->code_point == cp ? at : nullptr;
}

uint32_t sigma_class(uint32_t cp) {   // 0 other, 1 cased, 2 case-ignorable
  const auto* end = std::end(case_table::CLASSES);
  const auto* at = std::upper_bound(std::begin(case_table::CLASSES), end, cp,
                                    [](uint32_t c, const case_table::Range& r) { return c < r.first; });
  if (at == std::begin(case_table::CLASSES)) return 0;
  --at;
  return cp <= at->last ? at->kind : 0;
}

// Whether a cased letter comes before (step -1) or after (step 1) position `at`, past
// case-ignorable ones: the final-sigma rule.
bool cased_beside(const std::vector<uint32_t>& text, size_t at, int step) {
  for (size_t i = at;;) {
    if (step < 0 ? i == 0 : i + 1 >= text.size()) return false;
    i = step < 0 ? i - 1 : i + 1;
    uint32_t kind = sigma_class(text[i]);
    if (kind != 2) return kind == 1;
  }
}

struct Case {
  explicit Case(const OrtKernelInfo* info)
      : upper(tf2ir::attribute<int64_t>(info, "upper", 0) != 0),
        encoding(tf2ir::attribute<std::string>(info, "encoding", "")) {}

  void change_utf8(std::string_view s, std::string& out, std::vector<uint32_t>& text) const {
    decode_utf8(s, text);
    for (size_t i = 0; i < text.size(); ++i) {
      uint32_t cp = text[i];
      if (cp < 0x80) {
        char c = static_cast<char>(cp);
        if (upper ? (c >= 'a' && c <= 'z') : (c >= 'A' && c <= 'Z')) c ^= 0x20;
        out += c;
        continue;
      }
      if (!upper && cp == 0x3A3) {   // capital sigma: final form at a word's end
        bool final = cased_beside(text, i, -1) && !cased_beside(text, i, 1);
        append_utf8(final ? 0x3C2 : 0x3C3, out);
        continue;
      }
      const case_table::Mapping* m = upper ? find_mapping(case_table::UPPER, cp) : find_mapping(case_table::LOWER, cp);
      if (m == nullptr) {
        append_utf8(cp, out);
      } else {
        out.append(reinterpret_cast<const char*>(case_table::TEXT) + m->offset, m->length);
      }
    }
  }

  Ort::Status Compute(Ort::KernelContext& ctx) const {
    if (!encoding.empty() && encoding != "utf-8")
      return fail("encoding '" + encoding + "' is not '' or 'utf-8'");
    Strings in = read_strings(ctx, 0);
    if (encoding.empty()) {   // ASCII letters only, byte by byte: one pass over all the text
      const size_t n = in.views.size();
      const size_t total = n ? in.chars.size() - 1 : 0;
      std::string arena;
      arena.reserve(total + n);
      std::vector<size_t> starts(n + 1, 0);
      for (size_t i = 0; i < n; ++i) {
        starts[i] = arena.size();
        arena.append(in.views[i].data(), in.views[i].size());
        arena.push_back('\0');
      }
      starts[n] = arena.size();
      const unsigned char from = upper ? 'a' : 'A';
      auto* bytes = reinterpret_cast<unsigned char*>(arena.data());
      for (size_t k = 0; k < arena.size(); ++k)   // branch-free: the compiler vectorizes it
        bytes[k] ^= static_cast<unsigned char>((static_cast<unsigned char>(bytes[k] - from) < 26) << 5);
      const bool nul = total && std::memchr(in.chars.data(), 0, total) != nullptr;
      write_arena(ctx, 0, in.shape, arena, starts, nul);
      return Ort::Status(nullptr);
    }
    std::vector<uint32_t> text;
    write_strings(ctx, 0, in.shape, [&](size_t i, std::string& out) { change_utf8(in.views[i], out, text); });
    return Ort::Status(nullptr);
  }

  bool upper;
  std::string encoding;
};

// -- StringSplitV2 ---------------------------------------------------------------------------------

inline bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// TF's SplitV2 (str.split's rules): by `sep`, or where it is empty by runs of ASCII whitespace
// (no empty tokens); after maxsplit (> 0) splits, the rest is one more token.
void split(std::string_view s, std::string_view sep, int64_t maxsplit, std::vector<std::string_view>& out) {
  if (maxsplit == 0) {
    out.push_back(s);
    return;
  }
  int64_t splits = 0;
  if (sep.empty()) {
    size_t at = 0, n = s.size();
    while (at < n && is_space(s[at])) ++at;
    while (at < n) {
      size_t end = at;
      while (end < n && !is_space(s[end])) ++end;
      out.push_back(s.substr(at, end - at));
      at = end;
      while (at < n && is_space(s[at])) ++at;
      if (maxsplit > 0 && ++splits == maxsplit) {
        out.push_back(s.substr(at));
        return;
      }
    }
    return;
  }
  for (;;) {
    size_t found = s.find(sep);
    if (found == std::string_view::npos) break;
    out.push_back(s.substr(0, found));
    s.remove_prefix(found + sep.size());
    if (maxsplit > 0 && ++splits == maxsplit) break;
  }
  out.push_back(s);
}

struct SplitV2 {
  explicit SplitV2(const OrtKernelInfo* info) : maxsplit(tf2ir::attribute<int64_t>(info, "maxsplit", -1)) {}

  Ort::Status Compute(Ort::KernelContext& ctx) const {
    Strings in = read_strings(ctx, 0), sep = read_strings(ctx, 1);
    if (sep.views.size() != 1) return fail("sep must be a scalar, not of shape " + shape_text(sep.shape));
    std::vector<std::string_view> tokens;
    std::vector<int64_t> rows;   // tokens' row and column, flattened
    int64_t width = 0;
    for (size_t r = 0; r < in.views.size(); ++r) {
      size_t first = tokens.size();
      split(in.views[r], sep.views[0], maxsplit, tokens);
      for (size_t c = 0; c < tokens.size() - first; ++c) {
        rows.push_back(static_cast<int64_t>(r));
        rows.push_back(static_cast<int64_t>(c));
      }
      width = std::max(width, static_cast<int64_t>(tokens.size() - first));
    }
    const int64_t count = static_cast<int64_t>(tokens.size());
    int64_t* indices = ctx.GetOutput(0, Shape{count, 2}).GetTensorMutableData<int64_t>();
    if (!rows.empty()) std::memcpy(indices, rows.data(), rows.size() * sizeof(int64_t));
    write_strings(ctx, 1, Shape{count}, [&](size_t i, std::string& out) { out.assign(tokens[i].data(), tokens[i].size()); });
    int64_t* shape = ctx.GetOutput(2, Shape{2}).GetTensorMutableData<int64_t>();
    shape[0] = static_cast<int64_t>(in.views.size());
    shape[1] = width;
    return Ort::Status(nullptr);
  }

  int64_t maxsplit;
};

// -- StringJoin ------------------------------------------------------------------------------------

struct Join {
  explicit Join(const OrtKernelInfo* info) : separator(tf2ir::attribute<std::string>(info, "separator", "")) {}

  Ort::Status Compute(Ort::KernelContext& ctx) const {
    std::vector<Strings> inputs;
    for (size_t k = 0; k < ctx.GetInputCount(); ++k) inputs.push_back(read_strings(ctx, k));
    Shape shape;   // TF: the inputs have one shape, or are scalars
    bool shaped = false;
    for (const Strings& in : inputs) {
      if (in.shape.empty()) continue;
      if (shaped && in.shape != shape)
        return fail("Input shapes do not match: " + shape_text(shape) + " vs. " + shape_text(in.shape));
      shape = in.shape;
      shaped = true;
    }
    write_strings(ctx, 0, shape, [&](size_t i, std::string& out) {
      for (size_t k = 0; k < inputs.size(); ++k) {
        if (k) out.append(separator);
        std::string_view part = inputs[k].shape.empty() ? inputs[k].views[0] : inputs[k].views[i];
        out.append(part.data(), part.size());
      }
    });
    return Ort::Status(nullptr);
  }

  std::string separator;
};

// -- Substr ----------------------------------------------------------------------------------------

inline bool is_trail(unsigned char c) { return c >= 0x80 && c <= 0xBF; }

// TF's ForwardNUTF8CharPositions / BackNUTF8CharPositions: move `count` characters (a byte
// and its trailing 0x80-0xBF bytes) from `at`; whether there were that many.
bool forward_chars(std::string_view s, int64_t count, size_t& at) {
  int64_t done = 0;
  while (done < count && at < s.size()) {
    do ++at;
    while (at < s.size() && is_trail(static_cast<unsigned char>(s[at])));
    ++done;
  }
  return done == count;
}

bool back_chars(std::string_view s, int64_t count, size_t& at) {
  int64_t done = 0;
  while (done < count && at > 0) {
    do --at;
    while (is_trail(static_cast<unsigned char>(s[at])) && at > 0);
    ++done;
  }
  return done == count;
}

// One string's substring as TF's Substr takes it; false where pos is out of range.
bool substring(std::string_view s, int64_t pos, int64_t len, bool utf8, std::string_view& out) {
  const int64_t size = static_cast<int64_t>(s.size());
  if (!utf8) {
    int64_t start = pos < 0 ? size + pos : pos;
    if (start < 0 || start > size) return false;
    out = s.substr(static_cast<size_t>(start), len < 0 ? std::string_view::npos : static_cast<size_t>(len));
    return true;
  }
  if (pos >= 0) {
    size_t start = 0;
    if (!forward_chars(s, pos, start)) return false;
    size_t end = start;
    forward_chars(s, len, end);
    out = s.substr(start, end - start);
    return true;
  }
  // -pos - len characters skipped from the end, then -pos - skip (= min(-pos, len)) taken;
  // pos > INT64_MIN here, so -pos is exact, and the skip saturates instead of overflowing
  const int64_t back = -pos;
  const int64_t skip = len <= 0 ? (len < -(INT64_MAX - back) ? INT64_MAX : back - len) : (len >= back ? 0 : back - len);
  size_t end = s.size();
  if (!back_chars(s, skip, end)) return false;
  size_t start = end;
  if (!back_chars(s, back - skip, start)) return false;
  out = s.substr(start, end - start);
  return true;
}

struct Substr {
  explicit Substr(const OrtKernelInfo* info) : unit(tf2ir::attribute<std::string>(info, "unit", "BYTE")) {}

  Ort::Status Compute(Ort::KernelContext& ctx) const {
    if (unit != "BYTE" && unit != "UTF8_CHAR") return fail("unit '" + unit + "' is not BYTE or UTF8_CHAR");
    Strings in = read_strings(ctx, 0);
    Shape pos_shape, len_shape;
    std::vector<int64_t> pos = read_integers(ctx, 1, pos_shape), len = read_integers(ctx, 2, len_shape);
    if (pos_shape != len_shape)
      return fail("pos and len should have the same shape, got: " + shape_text(pos_shape) + " vs. " +
                  shape_text(len_shape));
    Shape shape = in.shape;
    if (!pos_shape.empty() && pos_shape != in.shape) {   // TF broadcasts to at most 2 dimensions
      if (!broadcast(in.shape, pos_shape, shape))
        return fail("Incompatible shapes: " + shape_text(in.shape) + " vs. " + shape_text(pos_shape));
      if (shape.size() > 2)
        return Ort::Status(("Substr broadcast not implemented for " + std::to_string(shape.size()) + " dimensions").c_str(),
                           ORT_NOT_IMPLEMENTED);
    }
    const std::vector<size_t> at_string = broadcast_index(in.shape, shape), at_pos = broadcast_index(pos_shape, shape);
    const bool utf8 = unit == "UTF8_CHAR";
    std::vector<std::string_view> pieces(at_string.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
      int64_t p = pos[at_pos[i]];
      if (p == INT64_MIN || !substring(in.views[at_string[i]], p, len[at_pos[i]], utf8, pieces[i]))
        return fail("pos " + std::to_string(p) + " out of range for string at index " + std::to_string(i));
    }
    write_strings(ctx, 0, shape, [&](size_t i, std::string& out) { out.assign(pieces[i].data(), pieces[i].size()); });
    return Ort::Status(nullptr);
  }

  std::string unit;
};

// -- StringEqual -----------------------------------------------------------------------------------

struct Equal {
  explicit Equal(const OrtKernelInfo* info) : negate(tf2ir::attribute<int64_t>(info, "negate", 0) != 0) {}

  Ort::Status Compute(Ort::KernelContext& ctx) const {
    Strings a = read_strings(ctx, 0), b = read_strings(ctx, 1);
    Shape shape;
    if (!broadcast(a.shape, b.shape, shape))
      return fail("Incompatible shapes: " + shape_text(a.shape) + " vs. " + shape_text(b.shape));
    bool* out = ctx.GetOutput(0, shape).GetTensorMutableData<bool>();
    if (a.shape == b.shape) {
      for (size_t i = 0; i < a.views.size(); ++i) out[i] = (a.views[i] == b.views[i]) != negate;
      return Ort::Status(nullptr);
    }
    const std::vector<size_t> at_a = broadcast_index(a.shape, shape), at_b = broadcast_index(b.shape, shape);
    for (size_t i = 0; i < at_a.size(); ++i) out[i] = (a.views[at_a[i]] == b.views[at_b[i]]) != negate;
    return Ort::Status(nullptr);
  }

  bool negate;
};

}  // namespace

void add_strings_ops(tf2ir::NativeOps& ops) {
  // made once per process and never freed (kernels.h): sessions may use them until it ends
  ops.add(STRINGS_DOMAIN, new Op<Case>("StringCase", {STRING}, {STRING}));
  ops.add(STRINGS_DOMAIN, new Op<SplitV2>("StringSplitV2", {STRING, STRING},
                                          {ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, STRING, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64}));
  ops.add(STRINGS_DOMAIN, new Op<Join>("StringJoin", {STRING}, {STRING}, true));
  ops.add(STRINGS_DOMAIN, new Op<Substr>("Substr", {STRING, ANY, ANY}, {STRING}));
  ops.add(STRINGS_DOMAIN, new Op<Equal>("StringEqual", {STRING, STRING}, {ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL}));
}

}  // namespace tf2ir_kernels
