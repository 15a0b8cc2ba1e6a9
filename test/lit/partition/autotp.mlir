// RUN: kiln-opt %s -split-input-file -kiln-partition="tp-size=2 rank=1" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-partition="tp-size=2 rank=0" | FileCheck %s --check-prefix=RANK0
// kiln-partition's AutoTP on a ragged, injected llama-like decoder: 4 query
// heads, 2 KV heads, head size 2, hidden 8, FFN 6, vocabulary 10.

// CHECK-LABEL: module attributes {kiln.partition_report = "{\22layers\22:[{\22kind\22:\22attention\22
// CHECK-SAME: \22kv_heads_per_rank\22:[1,1]
// CHECK-SAME: \22q_heads_per_rank\22:[2,2]
// CHECK: func.func @main(%[[IDS:[^:]*]]: tensor<1x?xi64> {kiln.name = "input_ids"}, %{{.*}}: tensor<?x1x?x2xf32> {kiln.name = "kv_cache.0.key"}, %{{.*}}: tensor<?x1x?x2xf32> {kiln.name = "kv_cache.0.value"}
// The embedding: rows [5, 10) here, a masked lookup, then the sum.
// CHECK: %[[LOCAL:.*]] = kiln.sub %[[IDS]], %{{.*}} : (tensor<1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
// CHECK: kiln.greater_or_equal %[[LOCAL]]
// CHECK: kiln.less %[[LOCAL]]
// CHECK: %[[IN:.*]] = kiln.and
// CHECK: %[[SAFE:.*]] = kiln.where %[[IN]], %[[LOCAL]]
// CHECK: %[[TABLE:.*]] = kiln.constant {kiln.shard = {axis = 0 : i64, full_dim = 10 : i64, full_name = "embed", groups = 1 : i64, offset = 5 : i64{{.*}}}, name = "embed"} dense<{{.*}}> : tensor<5x8xf32>
// CHECK: %[[ROWS:.*]] = kiln.gather %[[TABLE]], %[[SAFE]] {axis = 0 : i64} : (tensor<5x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
// CHECK: %[[MASK:.*]] = kiln.unsqueeze %[[IN]]
// CHECK: %[[MASKED:.*]] = kiln.where %[[MASK]], %[[ROWS]]
// CHECK: %[[H:.*]] = kiln.all_reduce %[[MASKED]] {reduction = "sum"}
// Query heads 2 and 3 and the KV head they read (1): three column slices.
// CHECK: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 16 : i64, full_name = "qkv", groups = 1 : i64, offset = 4 : i64{{.*}} : tensor<8x4xf32>
// CHECK: %[[Q:.*]] = kiln.linear %[[H]], %{{.*}} {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x4xf32>) -> tensor<1x?x4xf32>
// CHECK: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 16 : i64, full_name = "qkv", groups = 1 : i64, offset = 10 : i64{{.*}} : tensor<8x2xf32>
// CHECK: %[[K:.*]] = kiln.linear %[[H]]
// CHECK: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 16 : i64, full_name = "qkv", groups = 1 : i64, offset = 14 : i64{{.*}} : tensor<8x2xf32>
// CHECK: %[[V:.*]] = kiln.linear %[[H]]
// CHECK-NOT: kiln.split
// CHECK: kiln.constant dense<[1, -1, 2, 2]> : tensor<4xi64>
// CHECK: kiln.reshape %[[Q]], %{{.*}} -> tensor<1x?x2x2xf32>
// CHECK: kiln.constant dense<[1, -1, 1, 2]> : tensor<4xi64>
// CHECK: kiln.reshape %[[K]], %{{.*}} -> tensor<1x?x1x2xf32>
// CHECK: kiln.rotary {{.*}} -> tensor<1x?x2x2xf32>
// CHECK: kiln.rotary {{.*}} -> tensor<1x?x1x2xf32>
// CHECK: %[[O:.*]] = kiln.paged_attention {{.*}} -> tensor<1x?x2x2xf32>
// CHECK: kiln.constant dense<[1, -1, 4]> : tensor<3xi64>
// CHECK: %[[O3:.*]] = kiln.reshape %[[O]], {{.*}} -> tensor<1x?x4xf32>
// o_proj: rows [4, 8), no bias off rank 0, then the sum.
// CHECK: kiln.constant {kiln.shard = {axis = 0 : i64, full_dim = 8 : i64, full_name = "o_proj", groups = 1 : i64, offset = 4 : i64{{.*}} : tensor<4x8xf32>
// CHECK: %[[OP:.*]] = kiln.linear %[[O3]], %{{[^,]*}} {activation = "none"} : (tensor<1x?x4xf32>, tensor<4x8xf32>) -> tensor<1x?x8xf32>
// CHECK: %[[ATT:.*]] = kiln.all_reduce %[[OP]] {reduction = "sum"}
// CHECK: %{{.*}}, %[[N:.*]] = kiln.add_rms_norm %[[H]], %[[ATT]], %{{.*}}
// The MLP: gate columns [3, 6) and up columns [9, 12) of w_gate_up as two
// linears and a mul, down rows [3, 6).
// CHECK: %[[GW:.*]] = kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 12 : i64, full_name = "gate_up", groups = 1 : i64, offset = 3 : i64{{.*}} : tensor<8x3xf32>
// CHECK: %[[UW:.*]] = kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 12 : i64, full_name = "gate_up", groups = 1 : i64, offset = 9 : i64{{.*}} : tensor<8x3xf32>
// CHECK: %[[DW:.*]] = kiln.constant {kiln.shard = {axis = 0 : i64, full_dim = 6 : i64, full_name = "down", groups = 1 : i64, offset = 3 : i64{{.*}} : tensor<3x8xf32>
// CHECK: %[[G:.*]] = kiln.linear %[[N]], %[[GW]] {activation = "silu"} : (tensor<1x?x8xf32>, tensor<8x3xf32>) -> tensor<1x?x3xf32>
// CHECK: %[[U:.*]] = kiln.linear %[[N]], %[[UW]] {activation = "none"}
// CHECK: %[[P:.*]] = kiln.mul %[[G]], %[[U]] : (tensor<1x?x3xf32>, tensor<1x?x3xf32>) -> tensor<1x?x3xf32>
// CHECK: %[[MLP:.*]] = kiln.linear %[[P]], %[[DW]] {activation = "none"} : (tensor<1x?x3xf32>, tensor<3x8xf32>) -> tensor<1x?x8xf32>
// CHECK: kiln.all_reduce %[[MLP]] {reduction = "sum"}
// The LM head: vocabulary columns [5, 10), then every rank's side by side.
// CHECK: kiln.constant {kiln.shard = {axis = 1 : i64, full_dim = 10 : i64, full_name = "lm_head", groups = 1 : i64, offset = 5 : i64{{.*}} : tensor<8x5xf32>
// CHECK: %[[PART:.*]] = kiln.linear {{.*}} -> tensor<1x?x5xf32>
// CHECK: %[[LOGITS:.*]] = kiln.all_gather %[[PART]] {axis = 2 : i64, sizes = array<i64: 5, 5>} : (tensor<1x?x5xf32>) -> tensor<1x?x10xf32>
// CHECK: return %[[LOGITS]]

// Rank 0 adds o_proj's bias (once for all ranks).
// RANK0-LABEL: func.func @main
// RANK0: kiln.linear %{{.*}}, %{{.*}}, %{{.*}} {activation = "none"} : (tensor<1x?x4xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<1x?x8xf32>
// RANK0: kiln.all_gather %{{.*}} {axis = 2 : i64, sizes = array<i64: 5, 5>}
func.func @main(%ids: tensor<1x?xi64> {kiln.name = "input_ids"},
                %kc: tensor<?x2x?x2xf32> {kiln.name = "kv_cache.0.key"},
                %vc: tensor<?x2x?x2xf32> {kiln.name = "kv_cache.0.value"},
                %slots: tensor<?xi64> {kiln.name = "kv_slots"}, %qs: tensor<?xi64> {kiln.name = "query_start"},
                %cl: tensor<?xi64> {kiln.name = "context_lens"}, %bt: tensor<?x?xi64> {kiln.name = "block_tables"},
                %cos: tensor<1x?x1x2xf32>, %sin: tensor<1x?x1x2xf32>)
    -> (tensor<1x?x10xf32> {kiln.name = "logits"}) {
  %emb = kiln.constant {name = "embed"} dense<[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0], [4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0], [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0], [6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0], [7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0], [8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0], [9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0]]> : tensor<10x8xf32>
  %wqkv = kiln.constant {name = "qkv"} dense<0.25> : tensor<8x16xf32>
  %sizes = kiln.constant dense<[8, 4, 4]> : tensor<3xi64>
  %s4 = kiln.constant dense<[1, -1, 4, 2]> : tensor<4xi64>
  %s2 = kiln.constant dense<[1, -1, 2, 2]> : tensor<4xi64>
  %s3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %wo = kiln.constant {name = "o_proj"} dense<0.5> : tensor<8x8xf32>
  %bo = kiln.constant {name = "o_proj.bias"} dense<1.0> : tensor<8xf32>
  %norm = kiln.constant {name = "norm"} dense<1.0> : tensor<8xf32>
  %wgu = kiln.constant {name = "gate_up"} dense<0.125> : tensor<8x12xf32>
  %wd = kiln.constant {name = "down"} dense<0.0625> : tensor<6x8xf32>
  %wh = kiln.constant {name = "lm_head"} dense<1.0> : tensor<8x10xf32>
  %h = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<10x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %qkv = kiln.linear %h, %wqkv {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x16xf32>) -> tensor<1x?x16xf32>
  %q0, %k0, %v0 = kiln.split %qkv, %sizes {axis = -1 : i64, num_outputs = 0 : i64} : (tensor<1x?x16xf32>, tensor<3xi64>) -> (tensor<1x?x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>)
  %q1 = kiln.reshape %q0, %s4 {allowzero = 0 : i64} : (tensor<1x?x8xf32>, tensor<4xi64>) -> tensor<1x?x4x2xf32>
  %k1 = kiln.reshape %k0, %s2 {allowzero = 0 : i64} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %v1 = kiln.reshape %v0, %s2 {allowzero = 0 : i64} : (tensor<1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x2x2xf32>
  %q = kiln.rotary %q1, %cos, %sin {interleaved = 0 : i64, rotary_dim = 2 : i64} : (tensor<1x?x4x2xf32>, tensor<1x?x1x2xf32>, tensor<1x?x1x2xf32>) -> tensor<1x?x4x2xf32>
  %k = kiln.rotary %k1, %cos, %sin {interleaved = 0 : i64, rotary_dim = 2 : i64} : (tensor<1x?x2x2xf32>, tensor<1x?x1x2xf32>, tensor<1x?x1x2xf32>) -> tensor<1x?x2x2xf32>
  %o = kiln.paged_attention %q, %k, %v1, %kc, %vc, %slots, %qs, %cl, %bt {layout = "bshd", scale = 0.5 : f32} : (tensor<1x?x4x2xf32>, tensor<1x?x2x2xf32>, tensor<1x?x2x2xf32>, tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x?x4x2xf32>
  %o3 = kiln.reshape %o, %s3 {allowzero = 0 : i64} : (tensor<1x?x4x2xf32>, tensor<3xi64>) -> tensor<1x?x8xf32>
  %att = kiln.linear %o3, %wo, %bo {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<1x?x8xf32>
  %sum, %n = kiln.add_rms_norm %h, %att, %norm {epsilon = 1.0e-6 : f32} : (tensor<1x?x8xf32>, tensor<1x?x8xf32>, tensor<8xf32>) -> (tensor<1x?x8xf32>, tensor<1x?x8xf32>)
  %mlp = kiln.gated_mlp %n, %wgu, %wd {activation = "silu"} : (tensor<1x?x8xf32>, tensor<8x12xf32>, tensor<6x8xf32>) -> tensor<1x?x8xf32>
  %r = kiln.add %sum, %mlp : (tensor<1x?x8xf32>, tensor<1x?x8xf32>) -> tensor<1x?x8xf32>
  %logits = kiln.linear %r, %wh {activation = "none"} : (tensor<1x?x8xf32>, tensor<8x10xf32>) -> tensor<1x?x10xf32>
  return %logits : tensor<1x?x10xf32>
}
