// RUN: kiln-opt %s -split-input-file -kiln-partition="tp-size=2 rank=0" | FileCheck %s
// kiln-partition near misses: graphs that look like a splittable layer but
// are not stay whole on every rank (no collective), and the report says why.

// A linear whose output feeds an add, not another linear: not an MLP pair.
// CHECK-LABEL: func.func @main
// CHECK: kiln.linear %{{.*}} : (tensor<1x?x8xf32>, tensor<8x6xf32>) -> tensor<1x?x6xf32>
// CHECK: kiln.linear %{{.*}} : (tensor<1x?x6xf32>, tensor<6x8xf32>) -> tensor<1x?x8xf32>
// CHECK-NOT: kiln.all_reduce
func.func @main(%x: tensor<1x?x8xf32>, %r: tensor<1x?x6xf32>) -> tensor<1x?x8xf32> {
  %w1 = kiln.constant {name = "w1"} dense<1.0> : tensor<8x6xf32>
  %w2 = kiln.constant {name = "w2"} dense<1.0> : tensor<6x8xf32>
  %h = kiln.linear %x, %w1 {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x6xf32>) -> tensor<1x?x6xf32>
  %a = kiln.add %h, %r : (tensor<1x?x6xf32>, tensor<1x?x6xf32>) -> tensor<1x?x6xf32>
  %y = kiln.linear %a, %w2 {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// -----

// The MLP pair proper (gelu between, as GPT-2): split, bias on rank 0.
// CHECK-LABEL: func.func @main
// CHECK: %[[H:.*]] = kiln.linear %{{.*}}, %{{.*}}, %{{.*}} {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x3xf32>, tensor<3xf32>) -> tensor<1x?x3xf32>
// CHECK: %[[G:.*]] = kiln.gelu %[[H]] {approximate = "tanh"} : (tensor<1x?x3xf32>) -> tensor<1x?x3xf32>
// CHECK: %[[Y:.*]] = kiln.linear %[[G]], %{{.*}}, %{{.*}} {activation = "none"} : (tensor<1x?x3xf32>, tensor<3x8xf32>, tensor<8xf32>) -> tensor<1x?x8xf32>
// CHECK: kiln.all_reduce %[[Y]]
func.func @main(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %w1 = kiln.constant {name = "c_fc"} dense<1.0> : tensor<8x6xf32>
  %b1 = kiln.constant {name = "c_fc.bias"} dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %w2 = kiln.constant {name = "c_proj"} dense<1.0> : tensor<6x8xf32>
  %b2 = kiln.constant {name = "c_proj.bias"} dense<1.0> : tensor<8xf32>
  %h = kiln.linear %x, %w1, %b1 {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x6xf32>, tensor<6xf32>) -> tensor<1x?x6xf32>
  %g = kiln.gelu %h {approximate = "tanh"} : (tensor<1x?x6xf32>) -> tensor<1x?x6xf32>
  %y = kiln.linear %g, %w2, %b2 {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x8xf32>, tensor<8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// -----

// The reshape into heads does not name the head count (-1): the attention
// layer stays whole, with the reason in the report.
// CHECK-LABEL: module attributes {kiln.partition_report = "{{.*}}\22replicated\22:[{\22node\22:\22kiln.paged_attention\22,\22reason\22:\22the reshape into heads
// CHECK: kiln.paged_attention {{.*}} -> tensor<1x?x4x2xf32>
// CHECK-NOT: kiln.all_reduce
func.func @main(%x: tensor<1x?x8xf32>,
                %kc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>,
                %s4: tensor<4xi64>)
    -> tensor<1x?x8xf32> {
  %wq = kiln.constant {name = "q"} dense<1.0> : tensor<8x8xf32>
  %wk = kiln.constant {name = "k"} dense<1.0> : tensor<8x8xf32>
  %wv = kiln.constant {name = "v"} dense<1.0> : tensor<8x8xf32>
  %wo = kiln.constant {name = "o"} dense<1.0> : tensor<8x8xf32>
  %s3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %q0 = kiln.linear %x, %wq {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %k0 = kiln.linear %x, %wk {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %v0 = kiln.linear %x, %wv {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  %q = kiln.reshape %q0, %s4 {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %k = kiln.reshape %k0, %s4 {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %v = kiln.reshape %v0, %s4 {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<?x4x?x2xf32>, tensor<?x4x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %o3 = kiln.reshape %o, %s3 {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// -----

// A mixture of experts whose experts have fewer FFN columns (1) than ranks
// stays whole on every rank (nothing reduced), and the report says why.
// CHECK-LABEL: module attributes {kiln.partition_report = "{{.*}}\22replicated\22:[{\22node\22:\22kiln.moe\22,\22reason\22:\22its expert weights are not constants with at least one FFN column per rank\22,\22what\22:\22moe\22}]
// CHECK: kiln.moe %{{.*}} : (tensor<1x?x8xf32>, tensor<8x4xf32>, tensor<4x8x2xf32>, tensor<4x1x8xf32>) -> tensor<1x?x8xf32>
// CHECK-NOT: kiln.all_reduce
func.func @main(%x: tensor<1x?x8xf32>) -> tensor<1x?x8xf32> {
  %wr = kiln.constant {name = "router"} dense<0.5> : tensor<8x4xf32>
  %wgu = kiln.constant {name = "w_gate_up"} dense<0.25> : tensor<4x8x2xf32>
  %wd = kiln.constant {name = "w_down"} dense<0.125> : tensor<4x1x8xf32>
  %y = kiln.moe %x, %wr, %wgu, %wd {activation = "silu", normalize = 1 : i64, top_k = 2 : i64} : (tensor<1x?x8xf32>, tensor<8x4xf32>, tensor<4x8x2xf32>, tensor<4x1x8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// -----

// An rms_norm over every head at once (OLMo 2's q_norm, before the reshape
// into heads) cannot be split by heads: the attention stays whole, and the
// report names the norm.
// CHECK-LABEL: module attributes {kiln.partition_report = "{{.*}}q/k/v passes through an rms_norm that is not one per head
// CHECK-NOT: kiln.all_reduce
func.func @main(%h: tensor<1x?x4xf32>,
                %kc: tensor<?x2x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x2x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x2x2xf32> {
  %wq = kiln.constant {name = "q"} dense<0.25> : tensor<4x4xf32>
  %wk = kiln.constant {name = "k"} dense<0.25> : tensor<4x4xf32>
  %wv = kiln.constant {name = "v"} dense<0.25> : tensor<4x4xf32>
  %qn = kiln.constant {name = "q_norm"} dense<1.5> : tensor<4xf32>
  %s = kiln.constant dense<[1, -1, 2, 2]> : tensor<4xi64>
  %q0 = kiln.linear %h, %wq {activation = "none"} : (tensor<1x?x4xf32>, tensor<4x4xf32>) -> tensor<1x?x4xf32>
  %k0 = kiln.linear %h, %wk {activation = "none"} : (tensor<1x?x4xf32>, tensor<4x4xf32>) -> tensor<1x?x4xf32>
  %v0 = kiln.linear %h, %wv {activation = "none"} : (tensor<1x?x4xf32>, tensor<4x4xf32>) -> tensor<1x?x4xf32>
  %qq = kiln.rms_norm %q0, %qn {epsilon = 1.0e-6 : f32} : (tensor<1x?x4xf32>, tensor<4xf32>) -> tensor<1x?x4xf32>
  %q = kiln.reshape %qq, %s {allowzero = 0 : i64} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %k = kiln.reshape %k0, %s {allowzero = 0 : i64} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %v = kiln.reshape %v0, %s {allowzero = 0 : i64} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x2x2xf32>
  return %o : tensor<1x?x2x2xf32>
}
