// The library's entry: every source file's ops (kernels.h).
#include "kernels.h"

TF2IR_NATIVE_OPS(ops) {
  tf2ir_kernels::add_hash_ops(ops);
}
