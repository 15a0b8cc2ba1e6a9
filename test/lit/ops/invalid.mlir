// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// Verifier errors, one or more per op family.

func.func @broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @binary_element_types(%a: tensor<3xf32>, %b: tensor<3xf16>) -> tensor<3xf32> {
  // expected-error @+1 {{operands must have the same element type}}
  %0 = kiln.mul %a, %b : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @binary_result_shape(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{incompatible with the expected shape 'tensor<2x3xf32>'}}
  %0 = kiln.sub %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @compare_result(%a: tensor<3xi64>, %b: tensor<3xi64>) -> tensor<3xi64> {
  // expected-error @+1 {{result #0 must be tensor of 1-bit signless integer values}}
  %0 = kiln.equal %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

func.func @logic_operands(%a: tensor<3xf32>) -> tensor<3xi1> {
  // expected-error @+1 {{operand #0 must be tensor of 1-bit signless integer values}}
  %0 = kiln.and %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @unsupported_element_type(%a: tensor<3xi16>) -> tensor<3xi16> {
  // expected-error @+1 {{operand #0 must be tensor of}}
  %0 = kiln.add %a, %a : (tensor<3xi16>, tensor<3xi16>) -> tensor<3xi16>
  return %0 : tensor<3xi16>
}

// -----

func.func @where_types(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{x and y must have the same element type}}
  %0 = kiln.where %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @where_broadcast(%c: tensor<2xi1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.where %c, %x, %x : (tensor<2xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @unary_type(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.exp %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @unary_float_only(%x: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error @+1 {{operand #0 must be tensor of}}
  %0 = kiln.sqrt %x : (tensor<3xi32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = kiln.softmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reduce_flag(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{attribute 'keepdims' must be 0 or 1, got 2}}
  %0 = kiln.reduce_sum %x {keepdims = 2 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reduce_duplicate_axes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %axes = kiln.constant dense<[1, -1]> : tensor<2xi64>
  // expected-error @+1 {{axes contain -1 twice}}
  %0 = kiln.reduce_mean %x, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reduce_rank(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %axes = kiln.constant dense<1> : tensor<1xi64>
  // expected-error @+1 {{result must have rank 1}}
  %0 = kiln.reduce_max %x, %axes {keepdims = 0 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{contraction dims differ}}
  %0 = kiln.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<4x5xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{operands must have rank >= 1}}
  %0 = kiln.matmul %a, %b : (tensor<f32>, tensor<4x5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @matmul_batch(%a: tensor<3x2x4xf32>, %b: tensor<5x4x6xf32>) -> tensor<3x2x6xf32> {
  // expected-error @+1 {{batch dims are not broadcast-compatible}}
  %0 = kiln.matmul %a, %b : (tensor<3x2x4xf32>, tensor<5x4x6xf32>) -> tensor<3x2x6xf32>
  return %0 : tensor<3x2x6xf32>
}

// -----

func.func @gemm_rank(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{a must have rank 2}}
  %0 = kiln.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @gemm_trans(%a: tensor<3x2xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{attribute 'transA' must be 0 or 1, got 3}}
  %0 = kiln.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 3 : i64, transB = 0 : i64} : (tensor<3x2xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @gemm_bias(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %c: tensor<4xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{does not broadcast to 2x5}}
  %0 = kiln.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<4xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @layer_norm_stash(%x: tensor<2x4xf32>, %s: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{stash_type must be 1 (float), got 16}}
  %0 = kiln.layer_normalization %x, %s {axis = -1 : i64, epsilon = 1.0e-5 : f32, stash_type = 16 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @layer_norm_scale_type(%x: tensor<2x4xf32>, %s: tensor<4xf16>) -> tensor<2x4xf32> {
  // expected-error @+1 {{x and scale must have the same element type}}
  %0 = kiln.layer_normalization %x, %s {axis = -1 : i64, epsilon = 1.0e-5 : f32, stash_type = 1 : i64} : (tensor<2x4xf32>, tensor<4xf16>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @cast_dtype(%x: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{'to' = 42 is not a kiln DType number}}
  %0 = kiln.cast %x {to = 42 : i64} : (tensor<3xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @cast_result(%x: tensor<3xi64>) -> tensor<3xf16> {
  // expected-error @+1 {{result element type must be 'f32' (to = 1)}}
  %0 = kiln.cast %x {to = 1 : i64} : (tensor<3xi64>) -> tensor<3xf16>
  return %0 : tensor<3xf16>
}

// -----

func.func @reshape_two_inferred(%x: tensor<6xf32>) -> tensor<?x?xf32> {
  %s = kiln.constant dense<[-1, -1]> : tensor<2xi64>
  // expected-error @+1 {{shape has more than one -1}}
  %0 = kiln.reshape %x, %s {allowzero = 0 : i64} : (tensor<6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @reshape_count(%x: tensor<6xf32>, %s: tensor<2xi64>) -> tensor<4x2xf32> {
  // expected-error @+1 {{reshape changes the element count}}
  %0 = kiln.reshape %x, %s {allowzero = 0 : i64} : (tensor<6xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @reshape_shape_rank(%x: tensor<6xf32>, %s: tensor<2x1xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{shape must have rank 1}}
  %0 = kiln.reshape %x, %s {allowzero = 0 : i64} : (tensor<6xf32>, tensor<2x1xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{perm is not a permutation}}
  %0 = kiln.transpose %x {perm = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_result(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{incompatible with the expected shape 'tensor<3x2xf32>'}}
  %0 = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<4x4xf32>) -> tensor<6x3xf32> {
  // expected-error @+1 {{inputs differ in dim 1 (not the axis)}}
  %0 = kiln.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<4x4xf32>) -> tensor<6x3xf32>
  return %0 : tensor<6x3xf32>
}

// -----

func.func @concat_sum(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{incompatible with the expected shape 'tensor<6x3xf32>'}}
  %0 = kiln.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

func.func @concat_empty() -> tensor<3xf32> {
  // expected-error @+1 {{needs at least one input}}
  %0 = kiln.concat {axis = 0 : i64} : () -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @split_both(%x: tensor<4xf32>, %s: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{takes a split operand or num_outputs, not both}}
  %0:2 = kiln.split %x, %s {axis = 0 : i64, num_outputs = 2 : i64} : (tensor<4xf32>, tensor<2xi64>) -> (tensor<2xf32>, tensor<2xf32>)
  return %0#0 : tensor<2xf32>
}

// -----

func.func @split_count(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{num_outputs = 3 but the op has 2 results}}
  %0:2 = kiln.split %x {axis = 0 : i64, num_outputs = 3 : i64} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  return %0#0 : tensor<2xf32>
}

// -----

func.func @split_sizes(%x: tensor<4xf32>) -> tensor<2xf32> {
  %s = kiln.constant dense<[2, 3]> : tensor<2xi64>
  // expected-error @+1 {{split sizes sum to 5 but the dim is 4}}
  %0:2 = kiln.split %x, %s {axis = 0 : i64, num_outputs = 0 : i64} : (tensor<4xf32>, tensor<2xi64>) -> (tensor<2xf32>, tensor<3xf32>)
  return %0#0 : tensor<2xf32>
}

// -----

func.func @slice_lengths(%x: tensor<4x4xf32>, %a: tensor<1xi64>, %b: tensor<2xi64>) -> tensor<?x4xf32> {
  // expected-error @+1 {{starts, ends, axes and steps must have the same length}}
  %0 = kiln.slice %x, %a, %b : (tensor<4x4xf32>, tensor<1xi64>, tensor<2xi64>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @slice_zero_step(%x: tensor<4xf32>, %a: tensor<1xi64>) -> tensor<?xf32> {
  %z = kiln.constant dense<0> : tensor<1xi64>
  // expected-error @+1 {{steps must not be 0}}
  %0 = kiln.slice %x, %a, %a steps %z : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @gather_rank(%d: tensor<4x5xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{result must have rank 2}}
  %0 = kiln.gather %d, %i {axis = 0 : i64} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @gather_axis(%d: tensor<4x5xf32>, %i: tensor<2xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %0 = kiln.gather %d, %i {axis = -3 : i64} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @squeeze_non_one(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  %a = kiln.constant dense<0> : tensor<1xi64>
  // expected-error @+1 {{cannot squeeze dim 0 of size 2}}
  %0 = kiln.squeeze %x, %a : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @unsqueeze_rank(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = kiln.constant dense<0> : tensor<1xi64>
  // expected-error @+1 {{result must have rank 2}}
  %0 = kiln.unsqueeze %x, %a : (tensor<3xf32>, tensor<1xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @expand_incompatible(%x: tensor<3xf32>) -> tensor<4xf32> {
  %s = kiln.constant dense<4> : tensor<1xi64>
  // expected-error @+1 {{cannot be expanded to the shape}}
  %0 = kiln.expand %x, %s : (tensor<3xf32>, tensor<1xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @tile_repeats(%x: tensor<2x3xf32>, %r: tensor<3xi64>) -> tensor<*xf32> {
  // expected-error @+1 {{repeats must have one entry per dim (2)}}
  %0 = kiln.tile %x, %r : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @flatten_axis(%x: tensor<2x3xf32>) -> tensor<6x1xf32> {
  // expected-error @+1 {{axis 3 is out of range for rank 2}}
  %0 = kiln.flatten %x {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<6x1xf32>
  return %0 : tensor<6x1xf32>
}

// -----

func.func @clip_bound(%x: tensor<3xf32>, %lo: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{min and max must have rank 0}}
  %0 = kiln.clip %x min %lo : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @trilu_rank(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{input must have rank >= 2}}
  %0 = kiln.trilu %x {upper = 1 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @shape_length(%x: tensor<?x?x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{incompatible with the expected shape 'tensor<3xi64>'}}
  %0 = kiln.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<?x?x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @constant_of_shape_rank(%s: tensor<2xi64>) -> tensor<?xf32> {
  // expected-error @+1 {{result rank 1 differs from the shape's length 2}}
  %0 = kiln.constant_of_shape %s {value = 0.0 : f32} : (tensor<2xi64>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @range_scalar(%a: tensor<1xi64>) -> tensor<?xi64> {
  // expected-error @+1 {{start, limit and delta must have rank 0}}
  %0 = kiln.range %a, %a, %a : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

func.func @range_zero_delta(%a: tensor<i64>) -> tensor<?xi64> {
  %d = kiln.constant dense<0> : tensor<i64>
  // expected-error @+1 {{delta must not be 0}}
  %0 = kiln.range %a, %a, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

func.func @constant_type() -> tensor<2xi64> {
  // expected-error @+1 {{failed to verify that all of {value, output} have same type}}
  %0 = "kiln.constant"() {value = dense<1> : tensor<3xi64>} : () -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @cumsum_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %axis = kiln.constant dense<2> : tensor<i64>
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = kiln.cumsum %x, %axis {exclusive = 0 : i64, reverse = 0 : i64} : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @cumsum_axis_shape(%x: tensor<2x3xf32>, %axis: tensor<2xi64>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis must be a scalar or hold one element, got 'tensor<2xi64>'}}
  %0 = kiln.cumsum %x, %axis {exclusive = 0 : i64, reverse = 0 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
