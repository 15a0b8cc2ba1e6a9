// RUN: kiln-opt %s -split-input-file -kiln-partition="tp-size=4 rank=0" | FileCheck %s
// Near misses of the fused QKV shapes (fused-qkv.mlir): each attention layer
// stays whole on every rank (no collective), and the report says why.

// A q from the split is also added to something: not only reshaped into
// heads, and not a read of its dims.
// CHECK-LABEL: module attributes {kiln.partition_report = "{{.*}}\22reason\22:\22the projection's output (kiln.split) is not only reshaped into heads: kiln.add reads it too\22,\22what\22:\22attention\22}]
// CHECK-NOT: kiln.all_reduce
// CHECK: return
func.func @main(%x: tensor<1x?x8xf32>,
                %kc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>) {
  %w = kiln.constant {name = "c_attn"} dense<0.25> : tensor<8x24xf32>
  %wo = kiln.constant {name = "c_proj"} dense<0.5> : tensor<8x8xf32>
  %sizes = kiln.constant dense<8> : tensor<3xi64>
  %heads = kiln.constant dense<[1, -1, 4, 2]> : tensor<4xi64>
  %merge = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %qkv = kiln.linear %x, %w {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x24xf32>) -> tensor<1x?x24xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = 2 : i64, num_outputs = 0 : i64} : (tensor<1x?x24xf32>, tensor<3xi64>) -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>)
  %extra = kiln.add %q0, %x : (tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
  %q = kiln.reshape %q0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %k = kiln.reshape %k0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %v = kiln.reshape %v0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<?x4x?x2xf32>, tensor<?x4x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %o3 = kiln.reshape %o, %merge {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y, %extra : tensor<1x?x8xf32>, tensor<1x?x8xf32>
}

// -----

// k's width (its last dim) is read: it differs on every rank, so the read
// is not one that a split may keep.
// CHECK-LABEL: module attributes {kiln.partition_report = "{{.*}}\22reason\22:\22the projection's output (kiln.split) is not only reshaped into heads: kiln.shape reads it too\22
// CHECK-NOT: kiln.all_reduce
// CHECK: return
func.func @main(%x: tensor<1x?x8xf32>,
                %kc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> (tensor<1x?x8xf32>, tensor<i64>) {
  %w = kiln.constant {name = "c_attn"} dense<0.25> : tensor<8x24xf32>
  %wo = kiln.constant {name = "c_proj"} dense<0.5> : tensor<8x8xf32>
  %sizes = kiln.constant dense<8> : tensor<3xi64>
  %heads = kiln.constant dense<[1, -1, 4, 2]> : tensor<4xi64>
  %merge = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %i2 = kiln.constant dense<-1> : tensor<i64>
  %qkv = kiln.linear %x, %w {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x24xf32>) -> tensor<1x?x24xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = 2 : i64, num_outputs = 0 : i64} : (tensor<1x?x24xf32>, tensor<3xi64>) -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>)
  %ks = kiln.shape %k0 {end = 3 : i64, start = 0 : i64} : (tensor<1x?x8xf32>) -> tensor<3xi64>
  %kw = kiln.gather %ks, %i2 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %q = kiln.reshape %q0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %k = kiln.reshape %k0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %v = kiln.reshape %v0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<?x4x?x2xf32>, tensor<?x4x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %o3 = kiln.reshape %o, %merge {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y, %kw : tensor<1x?x8xf32>, tensor<i64>
}

// -----

// The fused projection itself has another reader besides the split.
// CHECK-LABEL: module attributes {kiln.partition_report = "{{.*}}\22reason\22:\22the fused projection has a reader besides the split: kiln.relu\22
// CHECK-NOT: kiln.all_reduce
// CHECK: return
func.func @main(%x: tensor<1x?x8xf32>,
                %kc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> (tensor<1x?x8xf32>, tensor<1x?x24xf32>) {
  %w = kiln.constant {name = "c_attn"} dense<0.25> : tensor<8x24xf32>
  %wo = kiln.constant {name = "c_proj"} dense<0.5> : tensor<8x8xf32>
  %sizes = kiln.constant dense<8> : tensor<3xi64>
  %heads = kiln.constant dense<[1, -1, 4, 2]> : tensor<4xi64>
  %merge = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %qkv = kiln.linear %x, %w {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x24xf32>) -> tensor<1x?x24xf32>
  %r = kiln.relu %qkv : (tensor<1x?x24xf32>) -> tensor<1x?x24xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = 2 : i64, num_outputs = 0 : i64} : (tensor<1x?x24xf32>, tensor<3xi64>) -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>)
  %q = kiln.reshape %q0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %k = kiln.reshape %k0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %v = kiln.reshape %v0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<?x4x?x2xf32>, tensor<?x4x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %o3 = kiln.reshape %o, %merge {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y, %r : tensor<1x?x8xf32>, tensor<1x?x24xf32>
}

// -----

// Phi-3's slices, but k's starts one column late (it overlaps v): not
// consecutive.
// CHECK-LABEL: module attributes {kiln.partition_report = "{{.*}}\22reason\22:\22q, k, v are not consecutive column slices of one fused projection: k (kiln.slice) should take columns [8, 16) with step 1, not [9, 17)\22
// CHECK-NOT: kiln.all_reduce
// CHECK: return
func.func @main(%x: tensor<1x?x8xf32>,
                %kc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x8xf32> {
  %w = kiln.constant {name = "qkv_proj"} dense<0.25> : tensor<8x24xf32>
  %wo = kiln.constant {name = "o_proj"} dense<0.5> : tensor<8x8xf32>
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %c9 = kiln.constant dense<9> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %c17 = kiln.constant dense<17> : tensor<1xi64>
  %c24 = kiln.constant dense<24> : tensor<1xi64>
  %axis = kiln.constant dense<2> : tensor<1xi64>
  %heads = kiln.constant dense<[1, -1, 4, 2]> : tensor<4xi64>
  %merge = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %qkv = kiln.linear %x, %w {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x24xf32>) -> tensor<1x?x24xf32>
  %q0 = kiln.slice %qkv, %c0, %c8 axes %axis : (tensor<1x?x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %k0 = kiln.slice %qkv, %c9, %c17 axes %axis : (tensor<1x?x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %v0 = kiln.slice %qkv, %c16, %c24 axes %axis : (tensor<1x?x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %q = kiln.reshape %q0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %k = kiln.reshape %k0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %v = kiln.reshape %v0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<?x4x?x2xf32>, tensor<?x4x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %o3 = kiln.reshape %o, %merge {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// -----

// q is every other column of [0, 16) (step 2): not one range of columns.
// CHECK-LABEL: module attributes {kiln.partition_report = "{{.*}}\22reason\22:\22q, k, v are not consecutive column slices of one fused projection: q (kiln.slice) should take columns [0, 8) with step 1\22
// CHECK-NOT: kiln.all_reduce
// CHECK: return
func.func @main(%x: tensor<1x?x8xf32>,
                %kc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x8xf32> {
  %w = kiln.constant {name = "qkv_proj"} dense<0.25> : tensor<8x24xf32>
  %wo = kiln.constant {name = "o_proj"} dense<0.5> : tensor<8x8xf32>
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c8 = kiln.constant dense<8> : tensor<1xi64>
  %c16 = kiln.constant dense<16> : tensor<1xi64>
  %c24 = kiln.constant dense<24> : tensor<1xi64>
  %axis = kiln.constant dense<2> : tensor<1xi64>
  %two = kiln.constant dense<2> : tensor<1xi64>
  %heads = kiln.constant dense<[1, -1, 4, 2]> : tensor<4xi64>
  %merge = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %qkv = kiln.linear %x, %w {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x24xf32>) -> tensor<1x?x24xf32>
  %q0 = kiln.slice %qkv, %c0, %c16 axes %axis steps %two : (tensor<1x?x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %k0 = kiln.slice %qkv, %c8, %c16 axes %axis : (tensor<1x?x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %v0 = kiln.slice %qkv, %c16, %c24 axes %axis : (tensor<1x?x24xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %q = kiln.reshape %q0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %k = kiln.reshape %k0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %v = kiln.reshape %v0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<?x4x?x2xf32>, tensor<?x4x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %o3 = kiln.reshape %o, %merge {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// -----

// The attention output merged a second time, and that merge is returned
// (not read only for its [batch, seq]): two readers.
// CHECK-LABEL: module attributes {kiln.partition_report = "{{.*}}\22reason\22:\22attention's output has more than one reader: kiln.reshape and kiln.reshape\22
// CHECK-NOT: kiln.all_reduce
// CHECK: return
func.func @main(%x: tensor<1x?x8xf32>,
                %kc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>) {
  %w = kiln.constant {name = "c_attn"} dense<0.25> : tensor<8x24xf32>
  %wo = kiln.constant {name = "c_proj"} dense<0.5> : tensor<8x8xf32>
  %sizes = kiln.constant dense<8> : tensor<3xi64>
  %heads = kiln.constant dense<[1, -1, 4, 2]> : tensor<4xi64>
  %merge = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %qkv = kiln.linear %x, %w {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x24xf32>) -> tensor<1x?x24xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = 2 : i64, num_outputs = 0 : i64} : (tensor<1x?x24xf32>, tensor<3xi64>) -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>)
  %q = kiln.reshape %q0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %k = kiln.reshape %k0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %v = kiln.reshape %v0, %heads {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<?x4x?x2xf32>, tensor<?x4x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %o3 = kiln.reshape %o, %merge {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %side = kiln.reshape %o, %merge {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y, %side : tensor<1x?x8xf32>, tensor<1x?x8xf32>
}

// -----

// GPT-2's shape with 3 heads at TP = 4: rank 3 gets none, and a rank
// without heads has no attention output whose [batch, seq] the reshape
// after c_proj could read.
// CHECK-LABEL: module attributes {kiln.partition_report = "{{.*}}\22reason\22:\22a rank gets no heads, and the attention output's dims are read besides o_proj (a rank without heads has no output to read them from)\22
// CHECK-NOT: kiln.all_reduce
// CHECK: return
func.func @main(%x: tensor<1x?x6xf32>,
                %kc: tensor<?x3x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x3x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x6xf32> {
  %w = kiln.constant {name = "c_attn"} dense<0.25> : tensor<6x18xf32>
  %wo = kiln.constant {name = "c_proj"} dense<0.5> : tensor<6x6xf32>
  %sizes = kiln.constant dense<6> : tensor<3xi64>
  %heads = kiln.constant dense<[1, -1, 3, 2]> : tensor<4xi64>
  %flat = kiln.constant dense<[1, -1, 6]> : tensor<3xi64>
  %w6 = kiln.constant dense<6> : tensor<1xi64>
  %qkv = kiln.linear %x, %w {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x18xf32>) -> tensor<1x?x18xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = 2 : i64, num_outputs = 0 : i64} : (tensor<1x?x18xf32>, tensor<3xi64>) -> (tensor<1x?x6xf32>, tensor<1x?x6xf32>, tensor<1x?x6xf32>)
  %q = kiln.reshape %q0, %heads {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %k = kiln.reshape %k0, %heads {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %v = kiln.reshape %v0, %heads {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x3x2xf32>, tensor<1x?x3x2xf32>, tensor<1x?x3x2xf32>, tensor<?x3x?x2xf32>, tensor<?x3x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x3x2xf32>
  %os = kiln.shape %o {end = 2 : i64, start = 0 : i64} : (tensor<1x?x3x2xf32>) -> tensor<2xi64>
  %back = kiln.concat %os, %w6 {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %o3 = kiln.reshape %o, %flat {allowzero = 0 : i64} : (tensor<1x?x3x2xf32>, tensor<3xi64>) -> tensor<1x?x6xf32>
  %y0 = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x6xf32>) -> tensor<1x?x6xf32>
  %y = kiln.reshape %y0, %back {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<3xi64>) -> tensor<1x?x6xf32>
  return %y : tensor<1x?x6xf32>
}

// -----

// GQA, 12 query heads and 3 KV heads at TP = 4: [3, 3, 3, 3] query heads
// would give rank 1 KV head 0 once and KV head 1 twice, and 3 KV heads
// cannot be split into whole groups over 4 ranks.
// CHECK-LABEL: module attributes {kiln.partition_report = "{{.*}}\22reason\22:\22rank 1's query heads [3, 6) read their KV heads in unequal groups, and there are too few KV heads to split whole groups instead (12 query heads, 3 KV heads, 4 ranks)\22
// CHECK-NOT: kiln.all_reduce
// CHECK: return
func.func @main(%x: tensor<1x?x12xf32>,
                %kc: tensor<?x3x?x1xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x3x?x1xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x12xf32> {
  %w = kiln.constant {name = "qkv"} dense<0.25> : tensor<12x18xf32>
  %wo = kiln.constant {name = "o_proj"} dense<0.5> : tensor<12x12xf32>
  %sizes = kiln.constant dense<[12, 3, 3]> : tensor<3xi64>
  %qh = kiln.constant dense<[1, -1, 12, 1]> : tensor<4xi64>
  %kvh = kiln.constant dense<[1, -1, 3, 1]> : tensor<4xi64>
  %merge = kiln.constant dense<[1, -1, 12]> : tensor<3xi64>
  %qkv = kiln.linear %x, %w {activation = "none"} : (tensor<1x?x12xf32>, tensor<12x18xf32>) -> tensor<1x?x18xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = -1 : i64, num_outputs = 0 : i64} : (tensor<1x?x18xf32>, tensor<3xi64>) -> (tensor<1x?x12xf32>, tensor<1x?x3xf32>, tensor<1x?x3xf32>)
  %q = kiln.reshape %q0, %qh {allowzero = 0 : i64} : (tensor<1x?x12xf32>, tensor<4xi64>) -> tensor<1x?x12x1xf32>
  %k = kiln.reshape %k0, %kvh {allowzero = 0 : i64} : (tensor<1x?x3xf32>, tensor<4xi64>) -> tensor<1x?x3x1xf32>
  %v = kiln.reshape %v0, %kvh {allowzero = 0 : i64} : (tensor<1x?x3xf32>, tensor<4xi64>) -> tensor<1x?x3x1xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 1.0 : f32} : (tensor<1x?x12x1xf32>, tensor<1x?x3x1xf32>, tensor<1x?x3x1xf32>, tensor<?x3x?x1xf32>, tensor<?x3x?x1xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x12x1xf32>
  %o3 = kiln.reshape %o, %merge {allowzero = 0 : i64} : (tensor<1x?x12x1xf32>, tensor<3xi64>) -> tensor<1x?x12xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x12xf32>, tensor<12x12xf32>) -> tensor<1x?x12xf32>
  return %y : tensor<1x?x12xf32>
}
