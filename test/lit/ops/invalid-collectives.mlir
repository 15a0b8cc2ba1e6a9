// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// Verifier errors of the collectives.

func.func @reduce_max(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduction must be 'sum', got 'max'}}
  %0 = kiln.all_reduce %x {reduction = "max"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_shape(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{operand and result must have the same shape}}
  %0 = kiln.all_reduce %x {reduction = "sum"} : (tensor<4xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @reduce_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{operand and result must share the element type}}
  %0 = kiln.all_reduce %x {reduction = "sum"} : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @gather_sum(%x: tensor<2x50xf32>) -> tensor<2x100xf32> {
  // expected-error @+1 {{result dim 1 must be the sum of sizes (128), got 100}}
  %0 = kiln.all_gather %x {axis = 1 : i64, sizes = array<i64: 50, 50, 28>} : (tensor<2x50xf32>) -> tensor<2x100xf32>
  return %0 : tensor<2x100xf32>
}

// -----

func.func @gather_not_a_rank_size(%x: tensor<2x40xf32>) -> tensor<2x128xf32> {
  // expected-error @+1 {{operand dim 1 (40) must be one of the ranks' sizes}}
  %0 = kiln.all_gather %x {axis = 1 : i64, sizes = array<i64: 50, 50, 28>} : (tensor<2x40xf32>) -> tensor<2x128xf32>
  return %0 : tensor<2x128xf32>
}

// -----

func.func @gather_axis(%x: tensor<2x50xf32>) -> tensor<2x50xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = kiln.all_gather %x {axis = 2 : i64, sizes = array<i64: 50, 0>} : (tensor<2x50xf32>) -> tensor<2x50xf32>
  return %0 : tensor<2x50xf32>
}

// -----

func.func @gather_one_rank(%x: tensor<2x50xf32>) -> tensor<2x50xf32> {
  // expected-error @+1 {{sizes must have one entry per rank (at least 2), got 1}}
  %0 = kiln.all_gather %x {axis = 1 : i64, sizes = array<i64: 50>} : (tensor<2x50xf32>) -> tensor<2x50xf32>
  return %0 : tensor<2x50xf32>
}

// -----

func.func @gather_off_axis(%x: tensor<2x50xf32>) -> tensor<3x100xf32> {
  // expected-error @+1 {{operand and result must agree off the gather axis}}
  %0 = kiln.all_gather %x {axis = 1 : i64, sizes = array<i64: 50, 50>} : (tensor<2x50xf32>) -> tensor<3x100xf32>
  return %0 : tensor<3x100xf32>
}

// -----

func.func @gather_negative(%x: tensor<2x50xf32>) -> tensor<2x50xf32> {
  // expected-error @+1 {{sizes must be >= 0, got -1}}
  %0 = kiln.all_gather %x {axis = 1 : i64, sizes = array<i64: 51, -1>} : (tensor<2x50xf32>) -> tensor<2x50xf32>
  return %0 : tensor<2x50xf32>
}
