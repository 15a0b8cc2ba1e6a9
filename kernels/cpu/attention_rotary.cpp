#include "kernels/cpu/attention_rotary.h"

#include <algorithm>

namespace kiln::kernels {
namespace {

// Rotate-half (NeoX/Llama): element i pairs with i + R/2.
void RotateHalfRow(const float *x, const float *c, const float *s, float *y, int64_t r) {
  const int64_t h = r / 2;
  for (int64_t i = 0; i < h; ++i)
    y[i] = x[i] * c[i] - x[i + h] * s[i];
  for (int64_t i = 0; i < h; ++i)
    y[i + h] = x[i + h] * c[i + h] + x[i] * s[i + h];
}

// Interleaved (GPT-J): element 2i pairs with 2i + 1.
void InterleavedRow(const float *x, const float *c, const float *s, float *y, int64_t r) {
  for (int64_t i = 0; i < r; i += 2) {
    y[i] = x[i] * c[i] - x[i + 1] * s[i];
    y[i + 1] = x[i + 1] * c[i + 1] + x[i] * s[i + 1];
  }
}

} // namespace

void Rotary(const float *x, const RotaryTable &cos, const RotaryTable &sin, float *y,
            const RotaryShape &shape) {
  const int64_t d = shape.dim, r = shape.rotary_dim;
  const size_t rank = shape.lead.size();
  int64_t rows = 1;
  for (int64_t v : shape.lead)
    rows *= v;
  // An odometer over the leading dims steps the table offsets; x and y are
  // contiguous rows of d.
  std::vector<int64_t> counter(rank, 0);
  int64_t off_c = 0, off_s = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const float *xr = x + row * d;
    float *yr = y + row * d;
    if (shape.interleaved)
      InterleavedRow(xr, cos.data + off_c, sin.data + off_s, yr, r);
    else
      RotateHalfRow(xr, cos.data + off_c, sin.data + off_s, yr, r);
    std::copy(xr + r, xr + d, yr + r);
    for (size_t k = rank; k-- > 0;) {
      off_c += cos.strides[k];
      off_s += sin.strides[k];
      if (++counter[k] < shape.lead[k])
        break;
      off_c -= cos.strides[k] * shape.lead[k];
      off_s -= sin.strides[k] * shape.lead[k];
      counter[k] = 0;
    }
  }
}

} // namespace kiln::kernels
