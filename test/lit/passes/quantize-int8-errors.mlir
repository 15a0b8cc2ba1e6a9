// RUN: not kiln-opt %s -kiln-quantize-int8 2>&1 | FileCheck %s
// RUN: not kiln-opt %s -kiln-quantize-int8=activations=int4 2>&1 | FileCheck %s --check-prefix=OPT
// kiln-quantize-int8 refuses a weight it cannot scale, naming it and where.

// OPT: error: kiln-quantize-int8: activations must be f32 or int8, got 'int4'
// CHECK: error: kiln-quantize-int8: weight 'bad' has a non-finite element at [1, 0]; int8 needs finite weights
func.func @non_finite(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = kiln.constant {name = "bad"} dense<[[1.0, 2.0], [0x7FC00000, 1.0]]> : tensor<2x2xf32>
  %y = kiln.linear %x, %w {activation = "none"} : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}
