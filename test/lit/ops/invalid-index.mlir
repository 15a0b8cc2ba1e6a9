// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// Verifier errors of gather_nd, scatter_nd and size.

func.func @gather_nd_element_type(%d: tensor<2x3xf32>, %i: tensor<4x2xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{data and result must have the same element type}}
  %0 = kiln.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<4x2xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @gather_nd_i32_indices(%d: tensor<2x3xf32>, %i: tensor<4x2xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #1 must be tensor of 64-bit signless integer values}}
  %0 = kiln.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<4x2xi32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gather_nd_tuple_too_long(%d: tensor<2x3xf32>, %i: tensor<4x3xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{the last dim of indices (3) must be in [1, 2]}}
  %0 = kiln.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<4x3xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @gather_nd_batch_dims_range(%d: tensor<2x3xf32>, %i: tensor<2x1xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{batch_dims 2 must be less than the ranks of data and indices}}
  %0 = kiln.gather_nd %d, %i {batch_dims = 2 : i64} : (tensor<2x3xf32>, tensor<2x1xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @gather_nd_negative_batch_dims(%d: tensor<2x3xf32>, %i: tensor<2x1xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{batch_dims must be >= 0, got -1}}
  %0 = kiln.gather_nd %d, %i {batch_dims = -1 : i64} : (tensor<2x3xf32>, tensor<2x1xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @gather_nd_batch_mismatch(%d: tensor<2x3xf32>, %i: tensor<5x1xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{batch dim 0 differs: 2 in data, 5 in indices}}
  %0 = kiln.gather_nd %d, %i {batch_dims = 1 : i64} : (tensor<2x3xf32>, tensor<5x1xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @gather_nd_result_shape(%d: tensor<2x3x4xf32>, %i: tensor<5x2xi64>) -> tensor<5x3xf32> {
  // expected-error @+1 {{incompatible with the expected shape 'tensor<5x4xf32>'}}
  %0 = kiln.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<2x3x4xf32>, tensor<5x2xi64>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

func.func @gather_nd_scalar_indices(%d: tensor<2x3xf32>, %i: tensor<i64>) -> tensor<*xf32> {
  // expected-error @+1 {{indices must have rank >= 1}}
  %0 = kiln.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<i64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @scatter_nd_reduction(%d: tensor<8xf32>, %i: tensor<2x1xi64>, %u: tensor<2xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{reduction must be none, add, mul, max or min, got 'sub'}}
  %0 = kiln.scatter_nd %d, %i, %u {reduction = "sub"} : (tensor<8xf32>, tensor<2x1xi64>, tensor<2xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @scatter_nd_bool_add(%d: tensor<8xi1>, %i: tensor<2x1xi64>, %u: tensor<2xi1>) -> tensor<8xi1> {
  // expected-error @+1 {{reduction 'add' is not supported for i1 data}}
  %0 = kiln.scatter_nd %d, %i, %u {reduction = "add"} : (tensor<8xi1>, tensor<2x1xi64>, tensor<2xi1>) -> tensor<8xi1>
  return %0 : tensor<8xi1>
}

// -----

func.func @scatter_nd_update_type(%d: tensor<8xf32>, %i: tensor<2x1xi64>, %u: tensor<2xf16>) -> tensor<8xf32> {
  // expected-error @+1 {{data and updates must have the same element type}}
  %0 = kiln.scatter_nd %d, %i, %u {reduction = "none"} : (tensor<8xf32>, tensor<2x1xi64>, tensor<2xf16>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @scatter_nd_result_shape(%d: tensor<8xf32>, %i: tensor<2x1xi64>, %u: tensor<2xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{must have the shape of data 'tensor<8xf32>'}}
  %0 = kiln.scatter_nd %d, %i, %u {reduction = "none"} : (tensor<8xf32>, tensor<2x1xi64>, tensor<2xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @scatter_nd_tuple_too_long(%d: tensor<8xf32>, %i: tensor<2x2xi64>, %u: tensor<2xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{the last dim of indices (2) must be in [1, 1]}}
  %0 = kiln.scatter_nd %d, %i, %u {reduction = "none"} : (tensor<8xf32>, tensor<2x2xi64>, tensor<2xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @scatter_nd_updates_shape(%d: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{updates 'tensor<2x4xf32>' must have shape indices.shape[:-1] + data.shape[1:] = 'tensor<2x3xf32>'}}
  %0 = kiln.scatter_nd %d, %i, %u {reduction = "none"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @size_result_rank(%x: tensor<2x3xf32>) -> tensor<1xi64> {
  // expected-error @+1 {{the result must have rank 0, got 'tensor<1xi64>'}}
  %0 = kiln.size %x : (tensor<2x3xf32>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
}

// -----

func.func @size_result_type(%x: tensor<2x3xf32>) -> tensor<i32> {
  // expected-error @+1 {{result #0 must be tensor of 64-bit signless integer values}}
  %0 = kiln.size %x : (tensor<2x3xf32>) -> tensor<i32>
  return %0 : tensor<i32>
}
