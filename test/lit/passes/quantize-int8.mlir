// RUN: kiln-opt %s -split-input-file -kiln-quantize-int8 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-quantize-int8=activations=int8 | FileCheck %s --check-prefix=ACT
// kiln-quantize-int8: the constant f32 weights of linear and gated_mlp become
// int8 with one f32 scale per column (max |w| / 127); everything else stays.

// Column 0: max 1 -> scale 1/127 (0x3C010204), 1 -> 127, 0.25 -> 31.75 -> 32.
// Column 1: max 2 -> scale 2/127 (0x3C810204), -0.5 -> -31.75 -> -32, 2 -> 127.
// Column 2: all zero -> scale 0, q 0. Bias and activation are kept, and the
// f32 original, read by nothing else, is gone.
// CHECK-LABEL: func.func @linear
// CHECK-NOT: tensor<2x3xf32>
// CHECK-DAG: %[[Q:.*]] = kiln.constant {name = "w.q8"} dense_resource<w.q8> : tensor<2x3xi8>
// CHECK-DAG: %[[S:.*]] = kiln.constant {name = "w.q8_scale"} dense_resource<w.q8_scale> : tensor<3xf32>
// CHECK: kiln.linear_q8 %arg0, %[[Q]], %[[S]], %arg1 {activation = "gelu"} : (tensor<?x2xf32>, tensor<2x3xi8>, tensor<3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
// CHECK: w.q8: "0x080000007FE000207F00"
// Quantized activations: the same weights, and the ops say so.
// ACT-LABEL: func.func @linear
// ACT: kiln.linear_q8 %arg0, %{{.*}}, %{{.*}}, %arg1 {activation = "gelu", activations = "int8"}
// ACT: w.q8: "0x080000007FE000207F00"
// CHECK: w.q8_scale: "0x080000000402013C0402813C00000000"
func.func @linear(%x: tensor<?x2xf32>, %b: tensor<3xf32>) -> tensor<?x3xf32> {
  %w = kiln.constant {name = "w"} dense<[[1.0, -0.5, 0.0], [0.25, 2.0, 0.0]]> : tensor<2x3xf32>
  %y = kiln.linear %x, %w, %b {activation = "gelu"} : (tensor<?x2xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// A gated MLP with both weights constant: both quantized. A weight two
// linears read is quantized once.
// CHECK-LABEL: func.func @mlp_and_shared
// CHECK: %[[GU:.*]] = kiln.constant {name = "gu.q8"} {{.*}} : tensor<4x8xi8>
// CHECK: %[[GUS:.*]] = kiln.constant {name = "gu.q8_scale"} {{.*}} : tensor<8xf32>
// CHECK: %[[D:.*]] = kiln.constant {name = "down.q8"} {{.*}} : tensor<4x4xi8>
// CHECK: %[[DS:.*]] = kiln.constant {name = "down.q8_scale"} {{.*}} : tensor<4xf32>
// CHECK: kiln.gated_mlp_q8 %arg0, %[[GU]], %[[GUS]], %[[D]], %[[DS]] {activation = "silu"}
// ACT-LABEL: func.func @mlp_and_shared
// ACT: kiln.gated_mlp_q8 {{.*}} {activation = "silu", activations = "int8"}
// CHECK: %[[P:.*]] = kiln.linear_q8 %{{.*}}, %[[D]], %[[DS]] {activation = "none"}
// CHECK: kiln.linear_q8 %[[P]], %[[D]], %[[DS]] {activation = "none"}
// CHECK-NOT: xf32> = kiln.constant
func.func @mlp_and_shared(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %gu = kiln.constant {name = "gu"} dense<0.5> : tensor<4x8xf32>
  %down = kiln.constant {name = "down"} dense<-0.25> : tensor<4x4xf32>
  %m = kiln.gated_mlp %x, %gu, %down {activation = "silu"} : (tensor<?x4xf32>, tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %p = kiln.linear %m, %down {activation = "none"} : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %q = kiln.linear %p, %down {activation = "none"} : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  return %q : tensor<?x4xf32>
}

// -----

// A tied weight: the embedding Gather still reads the f32 original, so it
// stays beside its int8 copy.
// CHECK-LABEL: func.func @tied
// CHECK-DAG: %[[E:.*]] = kiln.constant {name = "emb"} dense<1.000000e+00> : tensor<4x4xf32>
// CHECK-DAG: %[[Q:.*]] = kiln.constant {name = "emb.q8"} {{.*}} : tensor<4x4xi8>
// CHECK: kiln.gather %[[E]]
// CHECK: kiln.linear_q8 %{{.*}}, %[[Q]]
func.func @tied(%ids: tensor<?xi64>) -> tensor<?x4xf32> {
  %emb = kiln.constant {name = "emb"} dense<1.0> : tensor<4x4xf32>
  %h = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<4x4xf32>, tensor<?xi64>) -> tensor<?x4xf32>
  %y = kiln.linear %h, %emb {activation = "none"} : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Near misses, all left alone: a weight that is an argument (computed at run
// time), a half product, a gated MLP with one constant weight only, a matmul
// (injection turns constant-weight matmuls into linear first).
// CHECK: module attributes {kiln.quantize_report = "0 linears, 0 gated MLPs to int8, 3 kept (weight not a 2-D f32 constant, or not an f32 product)"}
// CHECK-LABEL: func.func @near_misses
// CHECK-NOT: _q8
// CHECK-NOT: xi8>
// CHECK: kiln.linear %arg0, %arg1
// CHECK: kiln.linear %arg2, %{{.*}} {{.*}} : (tensor<?x4xf16>, tensor<4x4xf16>)
// CHECK: kiln.gated_mlp %arg0, %{{.*}}, %arg3
// CHECK: kiln.matmul %arg0, %{{.*}}
// CHECK-NOT: _q8
func.func @near_misses(%x: tensor<?x4xf32>, %w: tensor<4x4xf32>, %h: tensor<?x4xf16>, %down: tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf16>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %a = kiln.linear %x, %w {activation = "none"} : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %wh = kiln.constant dense<0.5> : tensor<4x4xf16>
  %b = kiln.linear %h, %wh {activation = "none"} : (tensor<?x4xf16>, tensor<4x4xf16>) -> tensor<?x4xf16>
  %gu = kiln.constant dense<0.5> : tensor<4x8xf32>
  %c = kiln.gated_mlp %x, %gu, %down {activation = "silu"} : (tensor<?x4xf32>, tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %wm = kiln.constant dense<0.5> : tensor<4x4xf32>
  %d = kiln.matmul %x, %wm : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  return %a, %b, %c, %d : tensor<?x4xf32>, tensor<?x4xf16>, tensor<?x4xf32>, tensor<?x4xf32>
}
