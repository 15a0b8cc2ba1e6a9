#include "op_util.h"

#include <cstring>

namespace kiln::cpu {

void CopyBytes(const TensorView &in, TensorView &out) {
  if (in.data != out.data && in.bytes() > 0)
    std::memmove(out.data, in.data, in.bytes());
}

} // namespace kiln::cpu
