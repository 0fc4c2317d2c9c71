// StringToNumber and AsString: the native twins of opp/strings.py's string_to_number and
// as_string_kernel, with TF's semantics.
//
// StringToNumber parses as TF 2.x does (absl::SimpleAtof/SimpleAtod, absl::SimpleAtoi): ASCII
// whitespace around the text, one optional '+' (not before a '-'); floats: decimal with an
// optional exponent, hexadecimal after 0x (fraction and binary exponent optional), inf,
// infinity and nan(chars) in any case, correctly rounded to the out_type (overflow to inf);
// ints: decimal digits only, out of range an error. Its output type follows out_type, which
// the lite API cannot express (one output type per input type), so it is a plain OrtCustomOp
// whose output type is the one the model declares.
//
// AsString formats as TF's kernel does, with the same printf format: fill flag, width,
// precision and f, e or g for floats (denormals formatted as zero: TF's kernels run with
// denormals flushed), d/u for integers, "true"/"false" for bools (TF ignores width and fill
// there). One lite op per input type.
#include "kernels.h"

#include <cinttypes>
#include <clocale>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#if !defined(_WIN32)
#include <locale.h>
#if defined(__APPLE__)
#include <xlocale.h>
#endif
#endif

namespace tf2ir_kernels {
namespace {

constexpr int64_t MAX_FIELD = 4096;   // AsString's width and precision (opp/strings.py MAX_FIELD)

// -- StringToNumber --------------------------------------------------------------------------
inline bool ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
inline bool digit(char c) { return c >= '0' && c <= '9'; }
inline bool hex_digit(char c) {
  return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view strip(std::string_view s) {
  while (!s.empty() && ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

// Whether `s` (at `i`) starts with `word`, in any case.
bool starts_with_word(std::string_view s, size_t i, const char* word) {
  size_t n = std::strlen(word);
  if (s.size() - i < n) return false;
  for (size_t k = 0; k < n; ++k)
    if (lower(s[i + k]) != word[k]) return false;
  return true;
}

// Digits of `accept` from `i`; their count.
template <typename Accept>
size_t run(std::string_view s, size_t& i, Accept accept) {
  size_t start = i;
  while (i < s.size() && accept(s[i])) ++i;
  return i - start;
}

// The text absl::SimpleAtof/SimpleAtod accept (whitespace stripped, '+' dropped), or false.
bool float_text(std::string_view s, std::string_view* text) {
  s = strip(s);
  if (!s.empty() && s[0] == '+') {
    s.remove_prefix(1);
    if (!s.empty() && s[0] == '-') return false;
  }
  size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  if (i == s.size()) return false;
  bool ok = false;
  if (s.size() - i >= 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    i += 2;
    size_t whole = run(s, i, hex_digit), fraction = 0;
    if (i < s.size() && s[i] == '.') {
      ++i;
      fraction = run(s, i, hex_digit);
    }
    ok = whole + fraction > 0;
    if (ok && i < s.size() && (s[i] == 'p' || s[i] == 'P')) {
      size_t at = i++;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (run(s, i, digit) == 0) i = at;   // no exponent digits: the 'p' is left over
    }
  } else if (starts_with_word(s, i, "inf")) {
    i += starts_with_word(s, i, "infinity") ? 8 : 3;
    ok = true;
  } else if (starts_with_word(s, i, "nan")) {
    i += 3;
    if (i < s.size() && s[i] == '(') {
      size_t at = i++;
      run(s, i, [](char c) { return digit(c) || (lower(c) >= 'a' && lower(c) <= 'z') || c == '_'; });
      if (i < s.size() && s[i] == ')') ++i;
      else i = at;
    }
    ok = true;
  } else {
    size_t whole = run(s, i, digit), fraction = 0;
    if (i < s.size() && s[i] == '.') {
      ++i;
      fraction = run(s, i, digit);
    }
    ok = whole + fraction > 0;
    if (ok && i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      size_t at = i++;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (run(s, i, digit) == 0) i = at;
    }
  }
  if (!ok || i != s.size()) return false;
  *text = s;
  return true;
}

#if defined(_WIN32)
double to_double(const char* text) { return std::strtod(text, nullptr); }
float to_float(const char* text) { return std::strtof(text, nullptr); }
#else
locale_t c_locale() {   // the "C" locale: strtod's decimal point is '.' whatever the process set
  static locale_t locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  return locale;
}
double to_double(const char* text) { return strtod_l(text, nullptr, c_locale()); }
float to_float(const char* text) { return strtof_l(text, nullptr, c_locale()); }
#endif

template <typename T>
bool parse_float(std::string_view s, std::string& buffer, T* out) {
  std::string_view text;
  if (!float_text(s, &text)) return false;
  buffer.assign(text.data(), text.size());   // strtod reads up to a NUL: the checked text only
  if constexpr (std::is_same_v<T, float>) *out = to_float(buffer.c_str());
  else *out = to_double(buffer.c_str());
  return true;
}

// absl::SimpleAtoi, base 10.
template <typename T>
bool parse_int(std::string_view s, T* out) {
  s = strip(s);
  if (s.empty()) return false;
  bool negative = s[0] == '-';
  if (negative || s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const uint64_t limit = negative ? static_cast<uint64_t>(std::numeric_limits<T>::max()) + 1
                                  : static_cast<uint64_t>(std::numeric_limits<T>::max());
  uint64_t value = 0;
  for (char c : s) {
    if (!digit(c)) return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (value > (limit - d) / 10) return false;
    value = value * 10 + d;
  }
  if (negative) *out = value == 0 ? T(0) : static_cast<T>(-static_cast<int64_t>(value - 1) - 1);
  else *out = static_cast<T>(value);
  return true;
}

// The bad string for an error message: valid UTF-8 kept, other bytes and controls as \xNN,
// long ones cut.
std::string shown(std::string_view s) {
  std::string out;
  const size_t limit = 200;
  size_t i = 0;
  while (i < s.size() && out.size() < limit) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool valid = n > 0 && i + n <= s.size();
    for (size_t k = 1; valid && k < n; ++k)
      valid = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (valid && n == 1 && (c < 0x20 || c == 0x7f)) valid = false;
    if (valid) {
      out.append(s.data() + i, n);
      i += n;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
      ++i;
    }
  }
  if (i < s.size()) out += "...";
  return out;
}

struct ToNumberKernel {
  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    try {
      return Compute(context).release();
    } catch (const Ort::Exception& e) {
      return Ort::Status(e).release();
    } catch (const std::exception& e) {
      return Ort::Status(e).release();
    }
  }

  Ort::Status Compute(OrtKernelContext* context) {
    Ort::KernelContext ctx(context);
    Ort::ConstValue input = ctx.GetInput(0);
    auto info = input.GetTensorTypeAndShapeInfo();
    std::vector<int64_t> shape = info.GetShape();
    const size_t count = info.GetElementCount();
    std::vector<char> bytes;
    std::vector<size_t> offsets(count + 1);
    if (count > 0) {
      size_t total = input.GetStringTensorDataLength();
      bytes.resize(total + 1);
      input.GetStringTensorContent(bytes.data(), total, offsets.data(), count);
      offsets[count] = total;
    }
    Ort::UnownedValue output = ctx.GetOutput(0, shape);
    const ONNXTensorElementDataType type = output.GetTensorTypeAndShapeInfo().GetElementType();
    auto text = [&](size_t i) {
      return std::string_view(bytes.data() + offsets[i], offsets[i + 1] - offsets[i]);
    };
    switch (type) {
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return fill<float>(output, count, text);
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return fill<double>(output, count, text);
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return fill<int32_t>(output, count, text);
      case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return fill<int64_t>(output, count, text);
      default:
        return Ort::Status("StringToNumber's output must be float32, float64, int32 or int64",
                           ORT_INVALID_ARGUMENT);
    }
  }

  template <typename T, typename Text>
  Ort::Status fill(Ort::UnownedValue& output, size_t count, Text text) {
    T* out = count ? output.GetTensorMutableData<T>() : nullptr;
    std::string buffer;
    for (size_t i = 0; i < count; ++i) {
      bool ok;
      if constexpr (std::is_floating_point_v<T>) ok = parse_float<T>(text(i), buffer, &out[i]);
      else ok = parse_int<T>(text(i), &out[i]);
      if (!ok)
        return Ort::Status(("StringToNumberOp could not correctly convert string: " + shown(text(i))).c_str(),
                           ORT_INVALID_ARGUMENT);
    }
    return Ort::Status(nullptr);
  }
};

struct ToNumberOp : Ort::CustomOpBase<ToNumberOp, ToNumberKernel, true> {
  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo*, void** kernel) const {
    *kernel = new ToNumberKernel();
    return nullptr;
  }
  const char* GetName() const { return "StringToNumber"; }
  const char* GetExecutionProviderType() const { return CPU; }
  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING; }
  size_t GetOutputTypeCount() const { return 1; }
  // Any type: the model's (out_type). onnxruntime takes an untyped output only as optional.
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED; }
  OrtCustomOpInputOutputCharacteristic GetOutputCharacteristic(size_t) const {
    return OrtCustomOpInputOutputCharacteristic::INPUT_OUTPUT_OPTIONAL;
  }
};

// -- AsString --------------------------------------------------------------------------------
struct Format {
  int64_t precision = -1, width = -1;
  bool scientific = false, shortest = false;
  std::string fill;

  explicit Format(const OrtKernelInfo* info)
      : precision(tf2ir::attribute<int64_t>(info, "precision", -1)),
        width(tf2ir::attribute<int64_t>(info, "width", -1)),
        scientific(tf2ir::attribute<int64_t>(info, "scientific", 0) != 0),
        shortest(tf2ir::attribute<int64_t>(info, "shortest", 0) != 0),
        fill(tf2ir::attribute<std::string>(info, "fill", "")) {}

  // TF's printf format (opp/strings.py as_string_format), or an error.
  Ort::Status spec(bool floating, const char* integer, std::string* out) const {
    if (fill.size() > 1) return Ort::Status(("AsString: fill '" + fill + "' is more than one character").c_str(), ORT_INVALID_ARGUMENT);
    if (!fill.empty() && std::strchr(" +-0#", fill[0]) == nullptr)
      return Ort::Status(("AsString: fill '" + fill + "' is not one of ' ', '+', '-', '0', '#'").c_str(), ORT_INVALID_ARGUMENT);
    if (scientific && shortest) return Ort::Status("AsString: scientific and shortest cannot both be set", ORT_INVALID_ARGUMENT);
    if (!floating && (precision > -1 || scientific || shortest))
      return Ort::Status("AsString: precision, scientific and shortest apply to floats only", ORT_INVALID_ARGUMENT);
    if (width > MAX_FIELD || precision > MAX_FIELD)   // a crafted model must not make each string GBs
      return Ort::Status(("AsString: width " + std::to_string(width) + " or precision " + std::to_string(precision) +
                          " is over tf2ir's limit of " + std::to_string(MAX_FIELD) + " characters").c_str(),
                         ORT_INVALID_ARGUMENT);
    *out = "%" + fill + (width > -1 ? std::to_string(width) : "");
    if (floating) *out += (precision > -1 ? "." + std::to_string(precision) : "") + (scientific ? "e" : shortest ? "g" : "f");
    else *out += integer;
    return Ort::Status(nullptr);
  }
};

template <typename V>
bool print(std::string& out, const char* spec, V value) {
  char small[64];
  int n = std::snprintf(small, sizeof small, spec, value);
  if (n < 0) return false;
  if (static_cast<size_t>(n) < sizeof small) {
    out.assign(small, static_cast<size_t>(n));
    return true;
  }
  out.assign(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(&out[0], out.size(), spec, value);
  out.resize(static_cast<size_t>(n));
  return true;
}

template <typename T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, Ort::Float16_t> || std::is_same_v<T, Ort::BFloat16_t>) return static_cast<double>(v.ToFloat());
  else return static_cast<double>(v);
}

template <typename T>
struct AsString {
  AsString(const OrtApi*, const OrtKernelInfo* info) : format_(info) {}

  Ort::Status Compute(const Ort::Custom::Tensor<T>& x, Ort::Custom::Tensor<std::string>& y) {
    constexpr bool floating = std::is_floating_point_v<T> || std::is_same_v<T, Ort::Float16_t> ||
                              std::is_same_v<T, Ort::BFloat16_t>;
    constexpr bool is_signed = std::is_signed_v<T>;
    std::string spec;
    Ort::Status status = format_.spec(floating, is_signed ? "lld" : "llu", &spec);
    if (!status.IsOK()) return status;
    const size_t count = static_cast<size_t>(x.NumberOfElement());
    const T* data = count ? x.Data() : nullptr;
    std::vector<std::string> texts(count);
    for (size_t i = 0; i < count; ++i) {
      bool ok = true;
      if constexpr (std::is_same_v<T, bool>) {
        texts[i] = data[i] ? "true" : "false";   // TF: no width, no fill
      } else if constexpr (floating) {
        double v = as_double(data[i]);
        // TF formats with denormals flushed: the type's subnormals print as (signed) zero
        const double smallest = std::is_same_v<T, double> ? std::numeric_limits<double>::min()
                                                          : static_cast<double>(std::numeric_limits<float>::min());
        if (v != 0 && std::fabs(v) < smallest) v = std::copysign(0.0, v);
        ok = print(texts[i], spec.c_str(), v);
      } else if constexpr (is_signed) {
        ok = print(texts[i], spec.c_str(), static_cast<long long>(data[i]));
      } else {
        ok = print(texts[i], spec.c_str(), static_cast<unsigned long long>(data[i]));
      }
      if (!ok) return Ort::Status("AsString: the formatted text is too long", ORT_INVALID_ARGUMENT);
    }
    y.SetStringOutput(texts, x.Shape());
    return Ort::Status(nullptr);
  }

  Format format_;
};

template <typename T>
void add_as_string(tf2ir::NativeOps& ops) {
  ops.add(STRINGS_DOMAIN, Ort::Custom::CreateLiteCustomOp<AsString<T>>("AsString", CPU));
}

}  // namespace

void add_numbers_ops(tf2ir::NativeOps& ops) {
  ops.add(STRINGS_DOMAIN, new ToNumberOp());
  add_as_string<float>(ops);
  add_as_string<double>(ops);
  add_as_string<Ort::Float16_t>(ops);
  add_as_string<Ort::BFloat16_t>(ops);
  add_as_string<int8_t>(ops);
  add_as_string<int16_t>(ops);
  add_as_string<int32_t>(ops);
  add_as_string<int64_t>(ops);
  add_as_string<uint8_t>(ops);
  add_as_string<uint16_t>(ops);
  add_as_string<uint32_t>(ops);
  add_as_string<uint64_t>(ops);
  add_as_string<bool>(ops);
}

}  // namespace tf2ir_kernels
