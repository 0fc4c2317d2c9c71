// tf2ir's own native kernels: the twins of the numpy kernels opp/ declares for the ops that
// lower to tf2ir's custom domains (strings, bitwise). One library (tf2ir.opp._kernels,
// built by setup.py at install), declared by plugins/builtin/strings.py; each source file adds
// its ops with one function, called from kernels.cc.
#pragma once

#include <tf2ir/native.h>

#include <cstdint>
#include <string_view>

namespace tf2ir_kernels {

constexpr const char* CPU = "CPUExecutionProvider";
constexpr const char* STRINGS_DOMAIN = "ai.tf2ir.strings";   // opp/strings.py DOMAIN

uint64_t fingerprint64(const char* s, size_t n);

void add_hash_ops(tf2ir::NativeOps& ops);      // fingerprint.cc
void add_strings_ops(tf2ir::NativeOps& ops);   // strings.cc
void add_numbers_ops(tf2ir::NativeOps& ops);   // numbers.cc
void add_bitwise_ops(tf2ir::NativeOps& ops);   // bitwise.cc
void add_text_ops(tf2ir::NativeOps& ops);      // text.cc
void add_fastwordpiece_ops(tf2ir::NativeOps& ops);   // fastwordpiece.cc

}  // namespace tf2ir_kernels
