// RUN: kiln-opt %s -split-input-file -kiln-partition="tp-size=2 rank=0" | FileCheck %s --check-prefix=R0
// RUN: kiln-opt %s -split-input-file -kiln-partition="tp-size=2 rank=1" | FileCheck %s --check-prefix=R1
// RUN: kiln-opt %s -split-input-file -kiln-partition="tp-size=4 rank=3" | FileCheck %s --check-prefix=Z
// The fused QKV projections of the GPT-2 and Phi-3 exports, split by heads.

// GPT-2 (Optimum): one c_attn linear and a split; the export also reads the
// [batch, seq] dims of q and k (kiln.shape, then gathers) to build the head
// reshapes' targets, merges the attention output into [.., Hq D] a second
// time only to read its [batch, seq], and runs c_proj on [tokens, Hq D].
// 4 heads of 2: rank 1 gets heads 2 and 3, columns [4, 8) of q, [12, 16) of
// k, [20, 24) of v; the shape reads move to the projection's input, which
// every rank has whole.
// R0-LABEL: module attributes {kiln.partition_report = "{\22layers\22:[{\22kind\22:\22attention\22
// R0-SAME: \22q_heads_per_rank\22:[2,2]
// R0-SAME: \22replicated\22:[]
// R0: kiln.linear %{{.*}}, %{{.*}}, %{{.*}} {activation = "none"} : (tensor<?x4xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// R1-LABEL: func.func @main
// R1-SAME: (%[[X:[^:]*]]: tensor<1x?x8xf32>, %{{.*}}: tensor<?x2x?x2xf32> {kiln.name = "kv_cache.0.key"}
// R1: %[[WQ:.*]] = kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 24 : i64, full_name = "c_attn", groups = 1 : i64, offset = 4 : i64{{.*}} : tensor<8x4xf32>
// R1: %[[BQ:.*]] = kiln.constant {kiln.shard = {axis = 0 : i64, full_dim = 24 : i64, full_name = "c_attn.bias", groups = 1 : i64, offset = 4 : i64{{.*}} : tensor<4xf32>
// R1: %[[Q:.*]] = kiln.linear %[[X]], %[[WQ]], %[[BQ]] {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<1x?x4xf32>
// R1: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 24 : i64, full_name = "c_attn", groups = 1 : i64, offset = 12 : i64{{.*}} : tensor<8x4xf32>
// R1: %[[K:.*]] = kiln.linear %[[X]]
// R1: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 24 : i64, full_name = "c_attn", groups = 1 : i64, offset = 20 : i64{{.*}} : tensor<8x4xf32>
// R1: %[[V:.*]] = kiln.linear %[[X]]
// R1-NOT: kiln.split
// R1: kiln.shape %[[X]] {end = 3 : i64, start = 0 : i64}
// R1: kiln.reshape %[[K]], %{{.*}} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
// R1: kiln.reshape %[[V]], %{{.*}} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
// R1: kiln.shape %[[X]] {end = 2 : i64, start = 0 : i64}
// R1: kiln.reshape %[[Q]], %{{.*}} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
// R1: %[[O:.*]] = kiln.paged_attention {{.*}} -> tensor<1x?x2x2xf32>
// R1: kiln.shape %[[O]] {end = 4 : i64, start = 0 : i64} : (tensor<1x?x2x2xf32>) -> tensor<4xi64>
// R1: %[[M:.*]] = kiln.reshape %[[O]], %{{.*}} : (tensor<1x?x2x2xf32>, tensor<3xi64>) -> tensor<1x?x4xf32>
// R1: kiln.shape %[[M]] {end = 3 : i64, start = 0 : i64} : (tensor<1x?x4xf32>) -> tensor<3xi64>
// R1: %[[T:.*]] = kiln.constant dense<[-1, 4]> : tensor<2xi64>
// R1: %[[F:.*]] = kiln.reshape %[[O]], %[[T]] {{.*}} -> tensor<?x4xf32>
// R1: kiln.constant {kiln.shard = {axis = 0 : i64, full_dim = 8 : i64, full_name = "c_proj", groups = 1 : i64, offset = 4 : i64{{.*}} : tensor<4x8xf32>
// R1: %[[P:.*]] = kiln.linear %[[F]], %{{[^,]*}} {activation = "none"} : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
// R1: %[[S:.*]] = kiln.all_reduce %[[P]] {reduction = "sum"}
// R1: kiln.reshape %[[S]], %{{.*}} -> tensor<1x?x8xf32>
func.func @main(%x: tensor<1x?x8xf32>,
                %kc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x8xf32> {
  %wqkv = kiln.constant {name = "c_attn"} dense<0.25> : tensor<8x24xf32>
  %bqkv = kiln.constant {name = "c_attn.bias"} dense<0.5> : tensor<24xf32>
  %wo = kiln.constant {name = "c_proj"} dense<0.5> : tensor<8x8xf32>
  %bo = kiln.constant {name = "c_proj.bias"} dense<1.0> : tensor<8xf32>
  %sizes = kiln.constant dense<8> : tensor<3xi64>
  %i0 = kiln.constant dense<0> : tensor<i64>
  %i1 = kiln.constant dense<1> : tensor<i64>
  %ax0 = kiln.constant dense<0> : tensor<1xi64>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %hd = kiln.constant dense<2> : tensor<1xi64>
  %w8 = kiln.constant dense<8> : tensor<1xi64>
  %flat = kiln.constant dense<[-1, 8]> : tensor<2xi64>
  %qkv = kiln.linear %x, %wqkv, %bqkv {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x24xf32>, tensor<24xf32>) -> tensor<1x?x24xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = 2 : i64, num_outputs = 0 : i64} : (tensor<1x?x24xf32>, tensor<3xi64>) -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>)
  %ks = kiln.shape %k0 {end = 3 : i64, start = 0 : i64} : (tensor<1x?x8xf32>) -> tensor<3xi64>
  %kb = kiln.gather %ks, %i0 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %kt = kiln.gather %ks, %i1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %kb1 = kiln.unsqueeze %kb, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %kt1 = kiln.unsqueeze %kt, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %kvt = kiln.concat %kb1, %kt1, %m1, %hd {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %k = kiln.reshape %k0, %kvt {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %v = kiln.reshape %v0, %kvt {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %qb = kiln.shape %q0 {end = 2 : i64, start = 0 : i64} : (tensor<1x?x8xf32>) -> tensor<2xi64>
  %qt = kiln.concat %qb, %m1, %hd {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %q = kiln.reshape %q0, %qt {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<?x4x?x2xf32>, tensor<?x4x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %os = kiln.shape %o {end = 4 : i64, start = 0 : i64} : (tensor<1x?x4x2xf32>) -> tensor<4xi64>
  %ob = kiln.gather %os, %i0 {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %ot = kiln.gather %os, %i1 {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %ob1 = kiln.unsqueeze %ob, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %ot1 = kiln.unsqueeze %ot, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %mt = kiln.concat %ob1, %ot1, %m1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %merged = kiln.reshape %o, %mt {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %ms = kiln.shape %merged {end = 3 : i64, start = 0 : i64} : (tensor<1x?x8xf32>) -> tensor<3xi64>
  %mb = kiln.gather %ms, %i0 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %mq = kiln.gather %ms, %i1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %mb1 = kiln.unsqueeze %mb, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %mq1 = kiln.unsqueeze %mq, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %back = kiln.concat %mb1, %mq1, %w8 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %o2 = kiln.reshape %o, %flat {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %y2 = kiln.linear %o2, %wo, %bo {activation = "none"} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %y = kiln.reshape %y2, %back {allowzero = 0 : i64} : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// -----

// Phi-3 (Optimum): one qkv_proj, then q, k, v as three slices of its
// columns, with explicit steps of 1 and the last ending at INT64_MAX (ONNX
// clamps it to the width). 3 heads of 2: rank 0 gets heads 0 and 1, rank 1
// head 2 (q columns [4, 6), k [10, 12), v [16, 18)); at TP = 4 rank 3 gets
// none, adds zeros to the sum and keeps its KV cache inputs with 0 heads.
// R0-LABEL: module attributes {kiln.partition_report = "{\22layers\22:[{\22kind\22:\22attention\22
// R0-SAME: \22q_heads_per_rank\22:[2,1]
// R0-SAME: \22replicated\22:[]
// R0: kiln.paged_attention {{.*}} -> tensor<1x?x2x2xf32>
// R1-LABEL: func.func @main
// R1-SAME: tensor<?x1x?x2xf32> {kiln.name = "kv_cache.0.key"}
// R1: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 18 : i64, full_name = "qkv_proj", groups = 1 : i64, offset = 4 : i64{{.*}} : tensor<6x2xf32>
// R1: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 18 : i64, full_name = "qkv_proj", groups = 1 : i64, offset = 10 : i64{{.*}} : tensor<6x2xf32>
// R1: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 18 : i64, full_name = "qkv_proj", groups = 1 : i64, offset = 16 : i64{{.*}} : tensor<6x2xf32>
// R1-NOT: kiln.slice
// R1: kiln.paged_attention {{.*}} -> tensor<1x?x1x2xf32>
// R1: kiln.constant {kiln.shard = {axis = 0 : i64, full_dim = 6 : i64, full_name = "o_proj", groups = 1 : i64, offset = 4 : i64{{.*}} : tensor<2x6xf32>
// R1: kiln.all_reduce
// Z-LABEL: module attributes {kiln.partition_report = "{\22layers\22:[{\22kind\22:\22attention\22,\22kv_heads\22:3,
// Z-SAME: \22q_heads_per_rank\22:[1,1,1,0]
// Z: func.func @main(%[[X:[^:]*]]: tensor<1x?x6xf32>, %{{.*}}: tensor<?x0x?x2xf32> {kiln.name = "kv_cache.0.key"}
// Z-NOT: kiln.paged_attention
// Z: %[[Z:.*]] = kiln.mul %[[X]], %{{.*}} : (tensor<1x?x6xf32>, tensor<f32>) -> tensor<1x?x6xf32>
// Z: %[[S:.*]] = kiln.all_reduce %[[Z]] {reduction = "sum"}
// Z: return %[[S]]
func.func @main(%h: tensor<1x?x6xf32>,
                %kc: tensor<?x3x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x3x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x6xf32> {
  %w = kiln.constant {name = "qkv_proj"} dense<0.25> : tensor<6x18xf32>
  %wo = kiln.constant {name = "o_proj"} dense<0.5> : tensor<6x6xf32>
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c6 = kiln.constant dense<6> : tensor<1xi64>
  %c12 = kiln.constant dense<12> : tensor<1xi64>
  %end = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %axis = kiln.constant dense<2> : tensor<1xi64>
  %step = kiln.constant dense<1> : tensor<1xi64>
  %heads = kiln.constant dense<[1, -1, 3, 2]> : tensor<4xi64>
  %merge = kiln.constant dense<[1, -1, 6]> : tensor<3xi64>
  %qkv = kiln.linear %h, %w {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x18xf32>) -> tensor<1x?x18xf32>
  %q0 = kiln.slice %qkv, %c0, %c6 axes %axis steps %step : (tensor<1x?x18xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x6xf32>
  %k0 = kiln.slice %qkv, %c6, %c12 axes %axis steps %step : (tensor<1x?x18xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x6xf32>
  %v0 = kiln.slice %qkv, %c12, %end axes %axis steps %step : (tensor<1x?x18xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x?x6xf32>
  %q = kiln.reshape %q0, %heads {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %k = kiln.reshape %k0, %heads {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %v = kiln.reshape %v0, %heads {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x3x2xf32>, tensor<1x?x3x2xf32>, tensor<1x?x3x2xf32>, tensor<?x3x?x2xf32>, tensor<?x3x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x3x2xf32>
  %o3 = kiln.reshape %o, %merge {allowzero = 0 : i64} : (tensor<1x?x3x2xf32>, tensor<3xi64>) -> tensor<1x?x6xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x6xf32>) -> tensor<1x?x6xf32>
  return %y : tensor<1x?x6xf32>
}

// -----

// GPT-2's q/k/v shape reads with 3 heads: at TP = 4 rank 3 gets none. The
// reads move to the projection's input before the layer goes, so nothing
// is left reading a removed value.
// Z-LABEL: module attributes {kiln.partition_report = "{\22layers\22:[{\22kind\22:\22attention\22,\22kv_heads\22:3,
// Z-SAME: \22q_heads_per_rank\22:[1,1,1,0]
// Z: func.func @main(%[[X:[^:]*]]: tensor<1x?x6xf32>, %{{.*}}: tensor<?x0x?x2xf32> {kiln.name = "kv_cache.0.key"}
// Z-NOT: kiln.paged_attention
// Z: %[[Z:.*]] = kiln.mul %[[X]], %{{.*}} : (tensor<1x?x6xf32>, tensor<f32>) -> tensor<1x?x6xf32>
// Z: %[[S:.*]] = kiln.all_reduce %[[Z]] {reduction = "sum"}
// Z: return %[[S]]
func.func @main(%x: tensor<1x?x6xf32>,
                %kc: tensor<?x3x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x3x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x6xf32> {
  %w = kiln.constant {name = "c_attn"} dense<0.25> : tensor<6x18xf32>
  %wo = kiln.constant {name = "c_proj"} dense<0.5> : tensor<6x6xf32>
  %sizes = kiln.constant dense<6> : tensor<3xi64>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %hd = kiln.constant dense<2> : tensor<1xi64>
  %merge = kiln.constant dense<[1, -1, 6]> : tensor<3xi64>
  %qkv = kiln.linear %x, %w {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x18xf32>) -> tensor<1x?x18xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = 2 : i64, num_outputs = 0 : i64} : (tensor<1x?x18xf32>, tensor<3xi64>) -> (tensor<1x?x6xf32>, tensor<1x?x6xf32>, tensor<1x?x6xf32>)
  %qb = kiln.shape %q0 {end = 2 : i64, start = 0 : i64} : (tensor<1x?x6xf32>) -> tensor<2xi64>
  %qt = kiln.concat %qb, %m1, %hd {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %kb = kiln.shape %k0 {end = -1 : i64, start = 0 : i64} : (tensor<1x?x6xf32>) -> tensor<2xi64>
  %kt = kiln.concat %kb, %m1, %hd {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %q = kiln.reshape %q0, %qt {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %k = kiln.reshape %k0, %kt {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %v = kiln.reshape %v0, %kt {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x3x2xf32>, tensor<1x?x3x2xf32>, tensor<1x?x3x2xf32>, tensor<?x3x?x2xf32>, tensor<?x3x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x3x2xf32>
  %o3 = kiln.reshape %o, %merge {allowzero = 0 : i64} : (tensor<1x?x3x2xf32>, tensor<3xi64>) -> tensor<1x?x6xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x6xf32>) -> tensor<1x?x6xf32>
  return %y : tensor<1x?x6xf32>
}
