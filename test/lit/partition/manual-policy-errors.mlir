// RUN: not kiln-opt %s -kiln-partition="tp-size=2 rank=0 row-parallel=*/mlp/proj/*" 2>&1 | FileCheck %s
// kiln's injection_policy near miss: the linear a glob names must be fed by
// a linear (through elementwise ops); an add in between is refused, with the
// node and the glob named, rather than silently ignored.
// CHECK: error: {{.*}}injection_policy names '/block/mlp/proj/MatMul' (glob '*/mlp/proj/*') as row-parallel, but its input comes from kiln.add, not a linear through elementwise activations
// Near miss: the named linear is not fed by a linear (an add comes first).
func.func @main(%x: tensor<1x?x8xf32>, %r: tensor<1x?x6xf32>) -> tensor<1x?x8xf32> {
  %w1 = kiln.constant {name = "fc"} dense<1.0> : tensor<8x6xf32>
  %w2 = kiln.constant {name = "proj"} dense<1.0> : tensor<6x8xf32>
  %h = kiln.linear %x, %w1 {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x6xf32>) -> tensor<1x?x6xf32>
  %a = kiln.add %h, %r : (tensor<1x?x6xf32>, tensor<1x?x6xf32>) -> tensor<1x?x6xf32>
  %y = kiln.linear %a, %w2 {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x8xf32>) -> tensor<1x?x8xf32> loc("/block/mlp/proj/MatMul")
  return %y : tensor<1x?x8xf32>
}
