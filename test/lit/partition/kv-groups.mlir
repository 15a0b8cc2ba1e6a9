// RUN: kiln-opt %s -kiln-partition="tp-size=3 rank=0" | FileCheck %s --check-prefix=R0
// RUN: kiln-opt %s -kiln-partition="tp-size=3 rank=2" | FileCheck %s --check-prefix=R2
// GQA where the query-head split would give a rank unequal groups (the demo
// model's 8 query heads and 4 KV heads at TP = 3: [3, 3, 2] query heads
// would read KV heads 0, 0, 1 on rank 0). The ranks split whole KV groups
// instead: KV heads [2, 1, 1], query heads [4, 2, 2]. Head size 2.

// R0-LABEL: module attributes {kiln.partition_report =
// R0-SAME: \22kv_heads_per_rank\22:[2,1,1]
// R0-SAME: \22q_heads_per_rank\22:[4,2,2]
// R0-SAME: \22replicated\22:[]
// R0: func.func @main
// R0-SAME: tensor<?x2x?x2xf32> {kiln.name = "kv_cache.0.key"}
// R0: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 32 : i64, full_name = "qkv", groups = 1 : i64, offset = 0 : i64{{.*}} : tensor<16x8xf32>
// R0: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 32 : i64, full_name = "qkv", groups = 1 : i64, offset = 16 : i64{{.*}} : tensor<16x4xf32>
// R0: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 32 : i64, full_name = "qkv", groups = 1 : i64, offset = 24 : i64{{.*}} : tensor<16x4xf32>
// R0: kiln.paged_attention {{.*}} -> tensor<1x?x4x2xf32>
// R0: kiln.constant {kiln.shard = {axis = 0 : i64, full_dim = 16 : i64, full_name = "o_proj", groups = 1 : i64, offset = 0 : i64{{.*}} : tensor<8x16xf32>
// R0: kiln.all_reduce
// R2-LABEL: func.func @main
// R2-SAME: tensor<?x1x?x2xf32> {kiln.name = "kv_cache.0.key"}
// R2: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 32 : i64, full_name = "qkv", groups = 1 : i64, offset = 12 : i64{{.*}} : tensor<16x4xf32>
// R2: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 32 : i64, full_name = "qkv", groups = 1 : i64, offset = 22 : i64{{.*}} : tensor<16x2xf32>
// R2: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 32 : i64, full_name = "qkv", groups = 1 : i64, offset = 30 : i64{{.*}} : tensor<16x2xf32>
// R2: kiln.paged_attention {{.*}} : (tensor<1x?x2x2xf32>, tensor<1x?x1x2xf32>, tensor<1x?x1x2xf32>, {{.*}} -> tensor<1x?x2x2xf32>
// R2: kiln.constant {kiln.shard = {axis = 0 : i64, full_dim = 16 : i64, full_name = "o_proj", groups = 1 : i64, offset = 12 : i64{{.*}} : tensor<4x16xf32>
// R2: kiln.all_reduce
func.func @main(%h: tensor<1x?x16xf32>,
                %kc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x4x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x16xf32> {
  %wqkv = kiln.constant {name = "qkv"} dense<0.25> : tensor<16x32xf32>
  %sizes = kiln.constant dense<[16, 8, 8]> : tensor<3xi64>
  %s8 = kiln.constant dense<[1, -1, 8, 2]> : tensor<4xi64>
  %s4 = kiln.constant dense<[1, -1, 4, 2]> : tensor<4xi64>
  %s3 = kiln.constant dense<[1, -1, 16]> : tensor<3xi64>
  %wo = kiln.constant {name = "o_proj"} dense<0.5> : tensor<16x16xf32>
  %qkv = kiln.linear %h, %wqkv {activation = "none"} : (tensor<1x?x16xf32>, tensor<16x32xf32>) -> tensor<1x?x32xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = -1 : i64, num_outputs = 0 : i64} : (tensor<1x?x32xf32>, tensor<3xi64>) -> (tensor<1x?x16xf32>, tensor<1x?x8xf32>, tensor<1x?x8xf32>)
  %q = kiln.reshape %q0, %s8 {allowzero = 0 : i64} : (tensor<1x?x16xf32>, tensor<4xi64>) -> tensor<1x?x8x2xf32>
  %k = kiln.reshape %k0, %s4 {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %v = kiln.reshape %v0, %s4 {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x8x2xf32>, tensor<1x?x4x2xf32>, tensor<1x?x4x2xf32>, tensor<?x4x?x2xf32>, tensor<?x4x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x8x2xf32>
  %o3 = kiln.reshape %o, %s3 {allowzero = 0 : i64} : (tensor<1x?x8x2xf32>, tensor<3xi64>) -> tensor<1x?x16xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x16xf32>, tensor<16x16xf32>) -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}
