// tf2ir/native.h: what a native kernel library of a tf2ir plugin needs beside onnxruntime's
// headers (tf2ir.get_include() gives the folder holding both).
//
// A library is a shared object that onnxruntime loads (SessionOptions.register_custom_ops_library)
// and asks for its ops through the exported RegisterCustomOps. It links nothing: the API table
// comes from the onnxruntime that loads it (ORT_API_MANUAL_INIT), at the API version of the
// headers tf2ir carries (21), which onnxruntime 1.21 and every later release serve.
//
//   #include <tf2ir/native.h>
//
//   void Add1(const Ort::Custom::Tensor<float>& x, Ort::Custom::Tensor<float>& y) {
//     float* out = y.Allocate(x.Shape());
//     for (int64_t i = 0; i < x.NumberOfElement(); ++i) out[i] = x.Data()[i] + 1.0f;
//   }
//
//   TF2IR_NATIVE_OPS(ops) {
//     ops.add("ai.tf2ir.my_plugin", Ort::Custom::CreateLiteCustomOp("Add1", "CPUExecutionProvider", Add1));
//   }
//
// The ops and their domains are made once per process; every session that registers the
// library gets the same domains. An exception thrown while registering (or by the API) becomes
// the status onnxruntime reports, never a crash.
#pragma once

#ifndef ORT_API_MANUAL_INIT
#define ORT_API_MANUAL_INIT
#endif
#include "onnxruntime/onnxruntime_lite_custom_op.h"

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#if defined(_WIN32)
#define TF2IR_EXPORT __declspec(dllexport)
#else
#define TF2IR_EXPORT __attribute__((visibility("default")))
#endif

namespace tf2ir {

// The ops a library serves, by domain (filled once by the library's TF2IR_NATIVE_OPS body).
class NativeOps {
 public:
  // Serve `op` (made by Ort::Custom::CreateLiteCustomOp, or any OrtCustomOp) in `domain`.
  // The op is never freed (nor is this table): sessions may use it until the process ends.
  void add(const std::string& domain, OrtCustomOp* op) {
    for (auto& entry : domains_) {
      if (entry.first == domain) {
        entry.second.push_back(op);
        return;
      }
    }
    domains_.emplace_back(domain, std::vector<OrtCustomOp*>{op});
  }

  // Add every domain to `options` (the domain objects outlive every session: they are kept).
  void register_with(OrtSessionOptions* options) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (made_.empty()) {
      for (auto& entry : domains_) {
        made_.emplace_back(entry.first.c_str());
        for (OrtCustomOp* op : entry.second) made_.back().Add(op);
      }
    }
    Ort::UnownedSessionOptions session_options(options);
    for (auto& domain : made_) session_options.Add(domain);
  }

 private:
  std::vector<std::pair<std::string, std::vector<OrtCustomOp*>>> domains_;
  std::vector<Ort::CustomOpDomain> made_;
  std::mutex mutex_;
};

// Attribute `name` of the node a kernel is made for, or `fallback` where the node has none.
template <typename T>
T attribute(const OrtKernelInfo* info, const char* name, T fallback) {
  try {
    return Ort::ConstKernelInfo(info).GetAttribute<T>(name);
  } catch (const Ort::Exception&) {
    return fallback;
  }
}

// RegisterCustomOps' body: take the API table, fill the ops once, add the domains.
inline OrtStatus* register_library(OrtSessionOptions* options, const OrtApiBase* api_base,
                                   void (*declare)(NativeOps&)) {
  static NativeOps* ops = nullptr;   // made once, never freed: sessions may outlive unloading
  static std::once_flag declared;
  const OrtApi* api = api_base ? api_base->GetApi(ORT_API_VERSION) : nullptr;
  if (api == nullptr) {   // an onnxruntime older than the headers
    const OrtApi* first = api_base ? api_base->GetApi(1) : nullptr;
    return first ? first->CreateStatus(ORT_FAIL, "this library needs onnxruntime 1.21 or newer "
                                                 "(API version 21)")
                 : nullptr;
  }
  Ort::InitApi(api);
  try {
    std::call_once(declared, [&] {
      ops = new NativeOps();
      declare(*ops);
    });
    ops->register_with(options);
  } catch (const Ort::Exception& e) {
    return api->CreateStatus(e.GetOrtErrorCode(), e.what());
  } catch (const std::exception& e) {
    return api->CreateStatus(ORT_FAIL, e.what());
  }
  return nullptr;
}

}  // namespace tf2ir

// Defines the library's exported RegisterCustomOps and opens the body that declares its ops:
//   TF2IR_NATIVE_OPS(ops) { ops.add("ai.tf2ir.domain", Ort::Custom::CreateLiteCustomOp(...)); }
#define TF2IR_NATIVE_OPS(ops)                                                                   \
  static void tf2ir_declare_native_ops(tf2ir::NativeOps& ops);                                  \
  extern "C" TF2IR_EXPORT OrtStatus* ORT_API_CALL RegisterCustomOps(OrtSessionOptions* options, \
                                                                    const OrtApiBase* api_base) { \
    return tf2ir::register_library(options, api_base, tf2ir_declare_native_ops);                \
  }                                                                                             \
  static void tf2ir_declare_native_ops(tf2ir::NativeOps& ops)
