// Bitcast: the native twin of opp/bitwise.py's bitcast_kernel. The bytes of x read as the
// ONNX element type of attribute `type`: the same shape for the same width; a narrower type
// adds a last dim of the width ratio, a wider one needs a last dim of that ratio and drops it
// (TF's Bitcast). The output type comes from the attribute, which the lite API cannot express
// (one output type per input type), so Bitcast is a plain OrtCustomOp per input type whose
// output takes whatever type the model declares (checked against `type`).
#include "kernels.h"

#include <cstring>
#include <string>
#include <vector>

namespace tf2ir_kernels {
namespace {

constexpr const char* BITWISE_DOMAIN = "ai.tf2ir.bitwise";   // opp/bitwise.py DOMAIN

// Width in bytes and name of the element types Bitcast takes (0: not one of them).
size_t width(int64_t type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return 1;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32: return 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64: return 8;
    default: return 0;
  }
}

std::string type_name(int64_t type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: return "uint16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16: return "int16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return "bfloat16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32: return "uint32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64: return "uint64";
    default: return "ONNX type " + std::to_string(type);
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

Ort::Status fail(const std::string& message) { return Ort::Status(message.c_str(), ORT_INVALID_ARGUMENT); }

struct BitcastKernel {
  BitcastKernel(ONNXTensorElementDataType from, int64_t to) : from_(from), to_(to) {}

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
    const size_t a = width(from_), b = width(to_);
    const std::string what = "Cannot bitcast from " + type_name(from_) + " to " + type_name(to_);
    if (b == 0) return fail(what + ": not a type Bitcast takes");
    Ort::KernelContext ctx(context);
    Ort::ConstValue input = ctx.GetInput(0);
    auto info = input.GetTensorTypeAndShapeInfo();
    const std::vector<int64_t> shape = info.GetShape();
    std::vector<int64_t> out_shape = shape;
    if (a > b) {
      out_shape.push_back(static_cast<int64_t>(a / b));
    } else if (a < b) {
      if (shape.empty() || shape.back() != static_cast<int64_t>(b / a))
        return fail(what + ": shape " + shape_text(shape) + " needs a last dim of " + std::to_string(b / a));
      out_shape.pop_back();
    }
    Ort::UnownedValue output = ctx.GetOutput(0, out_shape);
    const auto declared = output.GetTensorTypeAndShapeInfo().GetElementType();
    if (declared != to_)
      return fail(what + ": the node's output is declared " + type_name(declared));
    const size_t bytes = info.GetElementCount() * a;
    if (bytes) std::memcpy(output.GetTensorMutableRawData(), input.GetTensorRawData(), bytes);
    return Ort::Status(nullptr);
  }

  ONNXTensorElementDataType from_;
  int64_t to_;
};

struct BitcastOp : Ort::CustomOpBase<BitcastOp, BitcastKernel, true> {
  explicit BitcastOp(ONNXTensorElementDataType from) : from_(from) {}

  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo* info, void** kernel) const {
    *kernel = new BitcastKernel(from_, tf2ir::attribute<int64_t>(info, "type", 0));
    return nullptr;
  }
  const char* GetName() const { return "Bitcast"; }
  const char* GetExecutionProviderType() const { return CPU; }
  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t) const { return from_; }
  size_t GetOutputTypeCount() const { return 1; }
  // Any type: the model's (attribute `type`). onnxruntime takes an untyped output only as
  // optional; with a typed input, it then keeps the type the model declares.
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED; }
  OrtCustomOpInputOutputCharacteristic GetOutputCharacteristic(size_t) const {
    return OrtCustomOpInputOutputCharacteristic::INPUT_OUTPUT_OPTIONAL;
  }

  ONNXTensorElementDataType from_;
};

}  // namespace

void add_bitwise_ops(tf2ir::NativeOps& ops) {
  for (auto type : {ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16, ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32, ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE,
                    ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64})
    ops.add(BITWISE_DOMAIN, new BitcastOp(type));
}

}  // namespace tf2ir_kernels
