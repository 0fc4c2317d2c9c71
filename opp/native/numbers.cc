// (filled by the native-kernels work: see kernels.h)
#include "kernels.h"

namespace tf2ir_kernels {

void add_numbers_ops(tf2ir::NativeOps&) {}

}  // namespace tf2ir_kernels
