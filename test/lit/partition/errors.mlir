// RUN: kiln-opt %s -split-input-file -verify-diagnostics -kiln-partition="tp-size=2 rank=0 require-all=true"
// RUN: not kiln-opt %s -kiln-partition="tp-size=2 rank=0 row-parallel=*nothing*" 2>&1 | FileCheck %s --check-prefix=GLOB
// kiln-partition's errors: with require-all a layer it cannot split names
// itself; a manual-policy glob that matches no linear is refused.

// GLOB: error: injection_policy glob '*nothing*' matches no linear op
func.func @main(%x: tensor<1x?x8xf32>,
                %kc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>,
                %s4: tensor<4xi64>)
    -> tensor<1x?x8xf32> {
  %wq = kiln.constant {name = "q"} dense<1.0> : tensor<8x8xf32>
  %wo = kiln.constant {name = "o"} dense<1.0> : tensor<8x8xf32>
  %s3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %q0 = kiln.linear %x, %wq {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %q = kiln.reshape %q0, %s4 {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  // expected-error @+1 {{cannot partition the attention 'kiln.paged_attention' (partition required): an intermediate of q/k/v (kiln.reshape) has another reader}}
  %o = kiln.paged_attention %q, %q, %q, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<?x4x?x2xf32>, tensor<?x4x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %o3 = kiln.reshape %o, %s3 {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}
