// What tf2ir's own kernels share (opp/native/*.cc): string tensors read and written as bytes
// (the lite API's helpers cut strings at the first NUL; these keep every byte), and an op type of
// fixed input and output types whose kernel returns a status and never lets an exception out.
#pragma once

#include "kernels.h"

#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tf2ir_kernels {

using Shape = std::vector<int64_t>;
constexpr ONNXTensorElementDataType STRING = ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING;
constexpr ONNXTensorElementDataType ANY = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;

inline Ort::Status fail(const std::string& message) { return Ort::Status(message.c_str(), ORT_INVALID_ARGUMENT); }

inline std::string shape_text(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

inline size_t element_count(const Shape& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

// A string input: views into one buffer (embedded NULs kept).
struct Strings {
  std::vector<char> chars;
  std::vector<std::string_view> views;
  Shape shape;
};

inline Strings read_strings(Ort::KernelContext& ctx, size_t index) {
  Strings in;
  Ort::ConstValue value = ctx.GetInput(index);
  auto info = value.GetTensorTypeAndShapeInfo();
  in.shape = info.GetShape();
  const size_t n = info.GetElementCount();
  if (n == 0) return in;
  const size_t total = value.GetStringTensorDataLength();
  in.chars.resize(total + 1);
  std::vector<size_t> offsets(n + 1);
  value.GetStringTensorContent(in.chars.data(), total, offsets.data(), n);
  offsets[n] = total;
  in.views.reserve(n);
  for (size_t i = 0; i < n; ++i) in.views.emplace_back(in.chars.data() + offsets[i], offsets[i + 1] - offsets[i]);
  return in;
}

// Output `index` of `shape` from `arena`: string i is the bytes [starts[i], starts[i + 1] - 1),
// each followed by a NUL; `nul` says whether some string holds a NUL of its own.
inline void write_arena(Ort::KernelContext& ctx, size_t index, const Shape& shape, const std::string& arena,
                        const std::vector<size_t>& starts, bool nul) {
  Ort::UnownedValue out = ctx.GetOutput(index, shape.data(), shape.size());
  const size_t n = element_count(shape);
  if (n > 0 && !nul) {   // one call for the whole tensor (C strings: only where no NUL is held)
    std::vector<const char*> texts(n);
    for (size_t i = 0; i < n; ++i) texts[i] = arena.data() + starts[i];
    out.FillStringTensor(texts.data(), n);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t size = starts[i + 1] - starts[i] - 1;
    char* at = out.GetResizedStringTensorElementBuffer(i, size);
    if (size) std::memcpy(at, arena.data() + starts[i], size);
  }
}

// Output `index` of `shape`, element i the bytes `make(i, buffer)` leaves in buffer.
template <typename Make>
void write_strings(Ort::KernelContext& ctx, size_t index, const Shape& shape, Make make) {
  const size_t n = element_count(shape);
  // Every result, each followed by a NUL, in one buffer (no allocation per string).
  std::string arena, buffer;
  std::vector<size_t> starts(n + 1, 0);
  bool nul = false;
  for (size_t i = 0; i < n; ++i) {
    buffer.clear();
    make(i, buffer);
    nul = nul || std::memchr(buffer.data(), 0, buffer.size()) != nullptr;
    starts[i] = arena.size();
    arena.append(buffer);
    arena.push_back('\0');
  }
  starts[n] = arena.size();
  write_arena(ctx, index, shape, arena, starts, nul);
}

// Output `index`: the 1-D string tensor of `starts.size() - 1` strings, string i the bytes
// arena[starts[i], starts[i + 1]).
inline void write_strings(Ort::KernelContext& ctx, size_t index, const std::string& arena,
                          const std::vector<size_t>& starts) {
  const size_t n = starts.size() - 1;
  write_strings(ctx, index, Shape{static_cast<int64_t>(n)}, [&](size_t i, std::string& out) {
    out.assign(arena, starts[i], starts[i + 1] - starts[i]);
  });
}

// The op: name, input and output types; the kernel `K` has K(const OrtKernelInfo*) and
// Ort::Status Compute(Ort::KernelContext&).
template <typename K>
struct Kernel {
  explicit Kernel(const OrtKernelInfo* info) : impl(info) {}
  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    try {
      Ort::KernelContext ctx(context);
      return impl.Compute(ctx).release();
    } catch (const Ort::Exception& e) {
      return Ort::GetApi().CreateStatus(e.GetOrtErrorCode(), e.what());
    } catch (const std::exception& e) {
      return Ort::GetApi().CreateStatus(ORT_INVALID_ARGUMENT, e.what());
    } catch (...) {
      return Ort::GetApi().CreateStatus(ORT_FAIL, "unknown failure");
    }
  }
  K impl;
};

template <typename K>
struct Op : Ort::CustomOpBase<Op<K>, Kernel<K>, true> {
  Op(const char* name, std::vector<ONNXTensorElementDataType> in, std::vector<ONNXTensorElementDataType> out,
     bool variadic = false)
      : name_(name), in_(std::move(in)), out_(std::move(out)), variadic_(variadic) {}
  OrtStatusPtr CreateKernelV2(const OrtApi& api, const OrtKernelInfo* info, void** kernel) const {
    try {
      *kernel = new Kernel<K>(info);
      return nullptr;
    } catch (const std::exception& e) {
      return api.CreateStatus(ORT_FAIL, e.what());
    }
  }
  const char* GetName() const { return name_; }
  const char* GetExecutionProviderType() const { return CPU; }
  size_t GetInputTypeCount() const { return in_.size(); }
  ONNXTensorElementDataType GetInputType(size_t i) const { return in_[i]; }
  size_t GetOutputTypeCount() const { return out_.size(); }
  ONNXTensorElementDataType GetOutputType(size_t i) const { return out_[i]; }
  OrtCustomOpInputOutputCharacteristic GetInputCharacteristic(size_t) const {
    return variadic_ ? INPUT_OUTPUT_VARIADIC : INPUT_OUTPUT_REQUIRED;
  }
  bool GetVariadicInputHomogeneity() const { return true; }

  const char* name_;
  std::vector<ONNXTensorElementDataType> in_, out_;
  bool variadic_;
};

}  // namespace tf2ir_kernels
