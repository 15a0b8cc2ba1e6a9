// RUN: kiln-opt %s -split-input-file -kiln-ragged | FileCheck %s
// kiln-ragged: an injected decoder with the model's own past/present KV
// becomes a ragged batch over a runtime-owned paged cache, with logits only
// for the sampled rows; graphs it cannot rewrite are left alone, with why.

// CHECK-LABEL: module attributes {kiln.interface = "ragged"}
// CHECK: func.func @main(%[[IDS:.*]]: tensor<?x?xi64> {{{.*}}kiln.name = "input_ids"}, %[[POS:.*]]: tensor<?x?xi64> {{{.*}}kiln.name = "position_ids"}, %[[SLOTS:.*]]: tensor<?xi64> {{{.*}}kiln.name = "kv_slots"}, %[[QS:.*]]: tensor<?xi64> {{{.*}}kiln.name = "query_start"}, %[[CL:.*]]: tensor<?xi64> {{{.*}}kiln.name = "context_lens"}, %[[BT:.*]]: tensor<?x?xi64> {{{.*}}kiln.name = "block_tables"}, %[[LI:.*]]: tensor<?xi64> {{{.*}}kiln.name = "logits_indices"}, %[[KC:.*]]: tensor<?x2x?x4xf32> {kiln.dims = ["num_blocks", "", "block_size", ""], kiln.name = "kv_cache.0.key"}, %[[VC:.*]]: tensor<?x2x?x4xf32> {{{.*}}kiln.name = "kv_cache.0.value"})
// CHECK-SAME: -> (tensor<?x?x8xf32> {kiln.dims = ["batch", "num_logits", ""], kiln.name = "logits"})
// CHECK-NOT: kiln.concat
// CHECK: %[[O:.*]] = kiln.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %[[KC]], %[[VC]], %[[SLOTS]], %[[QS]], %[[CL]], %[[BT]] {scale = 5.000000e-01 : f32}
// CHECK: %[[ROWS:.*]] = kiln.gather %{{.*}}, %[[LI]] {axis = 1 : i64} : (tensor<?x?x16xf32>, tensor<?xi64>) -> tensor<?x?x16xf32>
// CHECK: %[[L:.*]] = kiln.linear %[[ROWS]], %{{.*}} {activation = "none"}
// CHECK: return %[[L]] : tensor<?x?x8xf32>
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids", kiln.dims = ["batch", "seq"]},
                %mask: tensor<?x?xi64> {kiln.name = "attention_mask", kiln.dims = ["batch", "total"]},
                %pos: tensor<?x?xi64> {kiln.name = "position_ids", kiln.dims = ["batch", "seq"]},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %pv: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.value"})
    -> (tensor<?x?x8xf32> {kiln.name = "logits", kiln.dims = ["batch", "seq", ""]},
        tensor<?x2x?x4xf32> {kiln.name = "present.0.key"},
        tensor<?x2x?x4xf32> {kiln.name = "present.0.value"}) {
  %emb = kiln.constant dense<0.5> : tensor<16x8xf32>
  %wq = kiln.constant dense<0.25> : tensor<8x16xf32>
  %wk = kiln.constant dense<0.125> : tensor<8x8xf32>
  %wh = kiln.constant dense<1.0> : tensor<16x8xf32>
  %shape = kiln.constant dense<[1, -1, 2, 4]> : tensor<4xi64>
  %shape4 = kiln.constant dense<[1, -1, 4, 4]> : tensor<4xi64>
  %shape3 = kiln.constant dense<[1, -1, 16]> : tensor<3xi64>
  // The mask feeds only what attention replaces, so it goes too.
  %m = kiln.cast %mask {to = 9 : i64} : (tensor<?x?xi64>) -> tensor<?x?xi1>
  %mf = kiln.cast %m {to = 1 : i64} : (tensor<?x?xi1>) -> tensor<?x?xf32>
  %h = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %q0 = kiln.linear %h, %wq {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %k0 = kiln.linear %h, %wk {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %q1 = kiln.reshape %q0, %shape4 {allowzero = 0 : i64} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<1x?x4x4xf32>
  %k1 = kiln.reshape %k0, %shape {allowzero = 0 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %q = kiln.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x4xf32>) -> tensor<1x4x?x4xf32>
  %k = kiln.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %kall = kiln.concat %pk, %k {axis = -2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vall = kiln.concat %pv, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %vall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x4x?x4xf32>
  %ot = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x?x4xf32>) -> tensor<1x?x4x4xf32>
  %o3 = kiln.reshape %ot, %shape3 {allowzero = 0 : i64} : (tensor<1x?x4x4xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %logits = kiln.linear %o3, %wh {activation = "none"} : (tensor<?x?x16xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %logits, %kall, %vall : tensor<?x?x8xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// Near-miss: no position_ids input (the model derives positions itself).
// CHECK-LABEL: module attributes {kiln.ragged_skipped = "no position_ids input
// CHECK: kiln.attention
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x4x?x4xf32>, %k: tensor<1x2x?x4xf32>) -> tensor<1x4x?x4xf32> {
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %kall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x4x?x4xf32>
  return %o : tensor<1x4x?x4xf32>
}

// -----

// Near-miss: K is not past ++ new (a model without a KV cache).
// CHECK-LABEL: module attributes {kiln.ragged_skipped = "an attention's K or V is not past_key_values ++ the new tokens' along dim 2"}
// CHECK: kiln.attention
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"}, %pos: tensor<?x?xi64> {kiln.name = "position_ids"},
                %q: tensor<1x4x?x4xf32>, %k: tensor<1x2x?x4xf32>) -> tensor<1x4x?x4xf32> {
  %o = kiln.attention %q, %k, %k {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x4x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<1x4x?x4xf32>
  return %o : tensor<1x4x?x4xf32>
}

// -----

// Near-miss: the attention_mask also feeds the output, so dropping it would
// change the model; the function is left exactly as it was.
// CHECK-LABEL: module attributes {kiln.ragged_skipped = "the attention_mask feeds more than attention
// CHECK: func.func @main
// CHECK-SAME: kiln.name = "attention_mask"
// CHECK: kiln.attention
// CHECK-NOT: kiln.paged_attention
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %mask: tensor<?x?xi64> {kiln.name = "attention_mask"},
                %pos: tensor<?x?xi64> {kiln.name = "position_ids"},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x2x?x4xf32>, %k: tensor<1x2x?x4xf32>, %w: tensor<8x8xf32>)
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}, tensor<?x?xi64> {kiln.name = "mask_out"}) {
  %shape3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %kall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %o3 = kiln.reshape %o, %shape3 {allowzero = 0 : i64} : (tensor<1x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %l = kiln.linear %o3, %w {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %l, %mask : tensor<?x?x8xf32>, tensor<?x?xi64>
}

// -----

// A model that is already half (dtype unset keeps it): the paged caches take
// the KV type, and the head is found through the upcast of its logits.
// CHECK-LABEL: module attributes {kiln.interface = "ragged"}
// CHECK: %[[KC:[a-z0-9]+]]: tensor<?x2x?x4xf16> {kiln.dims = ["num_blocks", "", "block_size", ""], kiln.name = "kv_cache.0.key"}
// CHECK: kiln.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %[[KC]],
// CHECK: %[[ROWS:.*]] = kiln.gather {{.*}} -> tensor<?x?x8xf16>
// CHECK: %[[L:.*]] = kiln.linear %[[ROWS]], %{{.*}} -> tensor<?x?x8xf16>
// CHECK: %[[F:.*]] = kiln.cast %[[L]] {to = 1 : i64} : (tensor<?x?x8xf16>) -> tensor<?x?x8xf32>
// CHECK: return %[[F]]
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %pos: tensor<?x?xi64> {kiln.name = "position_ids"},
                %pk: tensor<?x2x?x4xf16> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x2x?x4xf16>, %k: tensor<1x2x?x4xf16>, %w: tensor<8x8xf16>)
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}) {
  %shape3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf16>, tensor<1x2x?x4xf16>) -> tensor<?x2x?x4xf16>
  %o = kiln.attention %q, %kall, %kall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x2x?x4xf16>, tensor<?x2x?x4xf16>, tensor<?x2x?x4xf16>) -> tensor<1x2x?x4xf16>
  %o3 = kiln.reshape %o, %shape3 {allowzero = 0 : i64} : (tensor<1x2x?x4xf16>, tensor<3xi64>) -> tensor<?x?x8xf16>
  %l = kiln.linear %o3, %w {activation = "none"} : (tensor<?x?x8xf16>, tensor<8x8xf16>) -> tensor<?x?x8xf16>
  %f = kiln.cast %l {to = 1 : i64} : (tensor<?x?x8xf16>) -> tensor<?x?x8xf32>
  return %f : tensor<?x?x8xf32>
}

// -----

// Near-miss: the upcast logits are not a linear's (the head is looked
// for through one Cast, not further).
// CHECK-LABEL: module attributes {kiln.ragged_skipped = "the logits are not a linear of [batch, tokens, hidden] states"}
// CHECK: kiln.attention
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %pos: tensor<?x?xi64> {kiln.name = "position_ids"},
                %pk: tensor<?x2x?x4xf16> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x2x?x4xf16>, %k: tensor<1x2x?x4xf16>)
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}) {
  %shape3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf16>, tensor<1x2x?x4xf16>) -> tensor<?x2x?x4xf16>
  %o = kiln.attention %q, %kall, %kall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x2x?x4xf16>, tensor<?x2x?x4xf16>, tensor<?x2x?x4xf16>) -> tensor<1x2x?x4xf16>
  %o3 = kiln.reshape %o, %shape3 {allowzero = 0 : i64} : (tensor<1x2x?x4xf16>, tensor<3xi64>) -> tensor<?x?x8xf16>
  %f = kiln.cast %o3 {to = 1 : i64} : (tensor<?x?x8xf16>) -> tensor<?x?x8xf32>
  return %f : tensor<?x?x8xf32>
}
