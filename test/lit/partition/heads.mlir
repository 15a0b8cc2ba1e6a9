// RUN: kiln-opt %s -split-input-file -kiln-partition="tp-size=4 rank=1" | FileCheck %s --check-prefix=R1
// RUN: kiln-opt %s -split-input-file -kiln-partition="tp-size=4 rank=2" | FileCheck %s --check-prefix=R2
// RUN: kiln-opt %s -split-input-file -kiln-partition="tp-size=4 rank=3" | FileCheck %s --check-prefix=R3
// Head splits kiln-partition must get right at TP = 4: GQA with fewer KV
// heads than ranks (each KV head replicated on the ranks that read it), and
// fewer heads than ranks (rank 3 gets none).

// GQA: 4 query heads, 2 KV heads, head size 2. Ranks 0 and 1 keep KV head 0,
// ranks 2 and 3 KV head 1: their K slices overlap.
// R1-LABEL: func.func @main
// R1-SAME: tensor<?x1x?x2xf32> {kiln.name = "kv_cache.0.key"}
// R1: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 16 : i64, full_name = "qkv", groups = 1 : i64, offset = 2 : i64{{.*}} : tensor<8x2xf32>
// R1: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 16 : i64, full_name = "qkv", groups = 1 : i64, offset = 8 : i64{{.*}} : tensor<8x2xf32>
// R1: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 16 : i64, full_name = "qkv", groups = 1 : i64, offset = 12 : i64{{.*}} : tensor<8x2xf32>
// R1: kiln.paged_attention {{.*}} -> tensor<1x?x1x2xf32>
// R1: kiln.all_reduce
// R2-LABEL: func.func @main
// R2: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 16 : i64, full_name = "qkv", groups = 1 : i64, offset = 4 : i64{{.*}} : tensor<8x2xf32>
// R2: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 16 : i64, full_name = "qkv", groups = 1 : i64, offset = 10 : i64{{.*}} : tensor<8x2xf32>
// R2: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 16 : i64, full_name = "qkv", groups = 1 : i64, offset = 14 : i64{{.*}} : tensor<8x2xf32>
// R3-LABEL: func.func @main
// R3: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 16 : i64, full_name = "qkv", groups = 1 : i64, offset = 6 : i64{{.*}} : tensor<8x2xf32>
// R3: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 16 : i64, full_name = "qkv", groups = 1 : i64, offset = 10 : i64{{.*}} : tensor<8x2xf32>
func.func @main(%h: tensor<1x?x8xf32>,
                %kc: tensor<?x2x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x2x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x8xf32> {
  %wqkv = kiln.constant {name = "qkv"} dense<0.25> : tensor<8x16xf32>
  %sizes = kiln.constant dense<[8, 4, 4]> : tensor<3xi64>
  %s4 = kiln.constant dense<[1, -1, 4, 2]> : tensor<4xi64>
  %s2 = kiln.constant dense<[1, -1, 2, 2]> : tensor<4xi64>
  %s3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %wo = kiln.constant {name = "o_proj"} dense<0.5> : tensor<8x8xf32>
  %qkv = kiln.linear %h, %wqkv {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x16xf32>) -> tensor<1x?x16xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = -1 : i64, num_outputs = 0 : i64} : (tensor<1x?x16xf32>, tensor<3xi64>) -> (tensor<1x?x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>)
  %q = kiln.reshape %q0, %s4 {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %k = kiln.reshape %k0, %s2 {allowzero = 0 : i64} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %v = kiln.reshape %v0, %s2 {allowzero = 0 : i64} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %o3 = kiln.reshape %o, %s3 {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// -----

// 3 heads (as the phi3 fixture) over 4 ranks: ranks 0-2 get one head each,
// rank 3 none. Rank 3 computes no attention: it adds zeros to the sum, and
// its KV cache inputs keep their place with 0 heads.
// R1-LABEL: func.func @main
// R1: kiln.paged_attention {{.*}} -> tensor<1x?x1x2xf32>
// R3-LABEL: func.func @main
// R3-SAME: %[[X:[^:]*]]: tensor<1x?x6xf32>, %{{.*}}: tensor<?x0x?x2xf32> {kiln.name = "kv_cache.0.key"}, %{{.*}}: tensor<?x0x?x2xf32> {kiln.name = "kv_cache.0.value"}
// R3-NOT: kiln.paged_attention
// R3: %[[Z:.*]] = kiln.mul %[[X]], %{{.*}} : (tensor<1x?x6xf32>, tensor<f32>) -> tensor<1x?x6xf32>
// R3: %[[S:.*]] = kiln.all_reduce %[[Z]] {reduction = "sum"}
// R3: return %[[S]]
func.func @main(%h: tensor<1x?x6xf32>,
                %kc: tensor<?x3x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x3x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x6xf32> {
  %wqkv = kiln.constant {name = "qkv"} dense<0.25> : tensor<6x18xf32>
  %sizes = kiln.constant dense<[6, 6, 6]> : tensor<3xi64>
  %s3h = kiln.constant dense<[1, -1, 3, 2]> : tensor<4xi64>
  %s3 = kiln.constant dense<[1, -1, 6]> : tensor<3xi64>
  %wo = kiln.constant {name = "o_proj"} dense<0.5> : tensor<6x6xf32>
  %qkv = kiln.linear %h, %wqkv {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x18xf32>) -> tensor<1x?x18xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = -1 : i64, num_outputs = 0 : i64} : (tensor<1x?x18xf32>, tensor<3xi64>) -> (tensor<1x?x6xf32>, tensor<1x?x6xf32>, tensor<1x?x6xf32>)
  %q = kiln.reshape %q0, %s3h {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %k = kiln.reshape %k0, %s3h {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %v = kiln.reshape %v0, %s3h {allowzero = 0 : i64} : (tensor<1x?x6xf32>, tensor<4xi64>) -> tensor<1x?x3x2xf32>
  %o = kiln.paged_attention %q, %k, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x3x2xf32>, tensor<1x?x3x2xf32>, tensor<1x?x3x2xf32>, tensor<?x3x?x2xf32>, tensor<?x3x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x3x2xf32>
  %o3 = kiln.reshape %o, %s3 {allowzero = 0 : i64} : (tensor<1x?x3x2xf32>, tensor<3xi64>) -> tensor<1x?x6xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x6xf32>, tensor<6x6xf32>) -> tensor<1x?x6xf32>
  return %y : tensor<1x?x6xf32>
}

// -----

// Qwen3's per-head q and k norms: an rms_norm over the head dim with one [D]
// scale, between the reshape into heads and the attention, narrows with the
// heads (rank 1: query head 1, KV head 0).
// R1-LABEL: func.func @main
// R1: %[[Q:.*]] = kiln.reshape {{.*}} -> tensor<1x?x1x2xf32>
// R1: %[[K:.*]] = kiln.reshape {{.*}} -> tensor<1x?x1x2xf32>
// R1: %[[QN:.*]] = kiln.rms_norm %[[Q]], %{{.*}} {epsilon = {{.*}}} : (tensor<1x?x1x2xf32>, tensor<2xf32>) -> tensor<1x?x1x2xf32>
// R1: %[[KN:.*]] = kiln.rms_norm %[[K]], %{{.*}} {epsilon = {{.*}}} : (tensor<1x?x1x2xf32>, tensor<2xf32>) -> tensor<1x?x1x2xf32>
// R1: kiln.paged_attention %[[QN]], %[[KN]], {{.*}} -> tensor<1x?x1x2xf32>
// R1: kiln.all_reduce
func.func @main(%h: tensor<1x?x8xf32>,
                %kc: tensor<?x2x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x2x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64>, %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> tensor<1x?x8xf32> {
  %wqkv = kiln.constant {name = "qkv"} dense<0.25> : tensor<8x16xf32>
  %sizes = kiln.constant dense<[8, 4, 4]> : tensor<3xi64>
  %s4 = kiln.constant dense<[1, -1, 4, 2]> : tensor<4xi64>
  %s2 = kiln.constant dense<[1, -1, 2, 2]> : tensor<4xi64>
  %s3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %qn = kiln.constant {name = "q_norm"} dense<[1.5, 0.5]> : tensor<2xf32>
  %kn = kiln.constant {name = "k_norm"} dense<[0.5, 1.5]> : tensor<2xf32>
  %wo = kiln.constant {name = "o_proj"} dense<0.5> : tensor<8x8xf32>
  %qkv = kiln.linear %h, %wqkv {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x16xf32>) -> tensor<1x?x16xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = -1 : i64, num_outputs = 0 : i64} : (tensor<1x?x16xf32>, tensor<3xi64>) -> (tensor<1x?x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>)
  %q = kiln.reshape %q0, %s4 {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %k = kiln.reshape %k0, %s2 {allowzero = 0 : i64} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %v = kiln.reshape %v0, %s2 {allowzero = 0 : i64} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %qq = kiln.rms_norm %q, %qn {epsilon = 1.0e-6 : f32} : (tensor<1x?x4x2xf32>, tensor<2xf32>) -> tensor<1x?x4x2xf32>
  %kk = kiln.rms_norm %k, %kn {epsilon = 1.0e-6 : f32} : (tensor<1x?x2x2xf32>, tensor<2xf32>) -> tensor<1x?x2x2xf32>
  %o = kiln.paged_attention %qq, %kk, %v, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %o3 = kiln.reshape %o, %s3 {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %y = kiln.linear %o3, %wo {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}
