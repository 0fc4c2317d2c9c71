// The library's entry: every source file's ops (kernels.h).
#include "kernels.h"

TF2IR_NATIVE_OPS(ops) {
  tf2ir_kernels::add_hash_ops(ops);
  tf2ir_kernels::add_strings_ops(ops);
  tf2ir_kernels::add_numbers_ops(ops);
  tf2ir_kernels::add_bitwise_ops(ops);
  tf2ir_kernels::add_text_ops(ops);
  tf2ir_kernels::add_fastwordpiece_ops(ops);
}
