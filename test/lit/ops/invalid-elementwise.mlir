// RUN: kiln-opt %s -split-input-file -verify-diagnostics
// One verifier error per elementwise op: the families share their
// verifiers, so this checks that every op is wired to them.

func.func @add(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @sub(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.sub %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @mul(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.mul %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @div(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.div %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @pow(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.pow %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @max(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.max %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @min(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.min %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @equal(%a: tensor<3xi64>, %b: tensor<3xi32>) -> tensor<3xi1> {
  // expected-error @+1 {{operands must have the same element type}}
  %0 = kiln.equal %a, %b : (tensor<3xi64>, tensor<3xi32>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @less(%a: tensor<3xi64>, %b: tensor<3xi32>) -> tensor<3xi1> {
  // expected-error @+1 {{operands must have the same element type}}
  %0 = kiln.less %a, %b : (tensor<3xi64>, tensor<3xi32>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @greater(%a: tensor<3xi64>, %b: tensor<3xi32>) -> tensor<3xi1> {
  // expected-error @+1 {{operands must have the same element type}}
  %0 = kiln.greater %a, %b : (tensor<3xi64>, tensor<3xi32>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @less_or_equal(%a: tensor<3xi64>, %b: tensor<3xi32>) -> tensor<3xi1> {
  // expected-error @+1 {{operands must have the same element type}}
  %0 = kiln.less_or_equal %a, %b : (tensor<3xi64>, tensor<3xi32>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @greater_or_equal(%a: tensor<3xi64>, %b: tensor<3xi32>) -> tensor<3xi1> {
  // expected-error @+1 {{operands must have the same element type}}
  %0 = kiln.greater_or_equal %a, %b : (tensor<3xi64>, tensor<3xi32>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @and(%a: tensor<3xi1>, %b: tensor<4xi1>) -> tensor<3xi1> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.and %a, %b : (tensor<3xi1>, tensor<4xi1>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @or(%a: tensor<3xi1>, %b: tensor<4xi1>) -> tensor<3xi1> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.or %a, %b : (tensor<3xi1>, tensor<4xi1>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @xor(%a: tensor<3xi1>, %b: tensor<4xi1>) -> tensor<3xi1> {
  // expected-error @+1 {{operands are not broadcast-compatible}}
  %0 = kiln.xor %a, %b : (tensor<3xi1>, tensor<4xi1>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @sqrt(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.sqrt %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @reciprocal(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.reciprocal %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @exp(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.exp %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @log(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.log %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @erf(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.erf %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @tanh(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.tanh %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @sigmoid(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.sigmoid %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @floor(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.floor %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @ceil(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.ceil %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @cos(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.cos %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @sin(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.sin %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @neg(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.neg %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @relu(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.relu %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @abs(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.abs %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @identity(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.identity %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @not(%x: tensor<3xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{must match the operand type}}
  %0 = kiln.not %x : (tensor<3xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @is_nan(%x: tensor<3xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{result shape must match the operand's}}
  %0 = kiln.is_nan %x : (tensor<3xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @log_softmax(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %0 = kiln.log_softmax %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reduce_min(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %axes = kiln.constant dense<[2]> : tensor<1xi64>
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = kiln.reduce_min %x, %axes {keepdims = 1 : i64, noop_with_empty_axes = 0 : i64} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
