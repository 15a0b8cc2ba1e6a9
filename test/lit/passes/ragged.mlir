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

// -----

// No position_ids input: the model numbers its new tokens from the past
// length (Hugging Face's cache_position, as Gemma's export does). The range
// becomes a position_ids input, [1, T] as input_ids; the past length goes.
// CHECK-LABEL: module attributes {kiln.interface = "ragged"}
// CHECK: func.func @main(%[[IDS:.*]]: tensor<?x?xi64> {kiln.dims = ["batch", "seq"], kiln.name = "input_ids"}, %{{.*}}: tensor<1x2x?x4xf32>, %{{.*}}: tensor<1x2x?x4xf32>, %{{.*}}: tensor<8x8xf32>, %[[POS:.*]]: tensor<?x?xi64> {kiln.dims = ["batch", "seq"], kiln.name = "position_ids"}, %{{.*}}: tensor<?xi64> {{{.*}}kiln.name = "kv_slots"}
// CHECK-NOT: kiln.range
// CHECK-NOT: kiln.shape
// CHECK: %[[FLAT:.*]] = kiln.reshape %[[POS]], %{{.*}} {allowzero = 0 : i64} : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?xi64>
// CHECK: %[[P:.*]] = kiln.unsqueeze %[[FLAT]]
// CHECK: kiln.gather %{{.*}}, %[[P]] {axis = 0 : i64}
// CHECK: kiln.paged_attention
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids", kiln.dims = ["batch", "seq"]},
                %mask: tensor<?x?xi64> {kiln.name = "attention_mask"},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x2x?x4xf32>, %k: tensor<1x2x?x4xf32>, %w: tensor<8x8xf32>)
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}) {
  %emb = kiln.constant dense<0.5> : tensor<16x8xf32>
  %ptab = kiln.constant dense<0.25> : tensor<32x8xf32>
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<i64>
  %c2 = kiln.constant dense<2> : tensor<i64>
  %shape3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %h = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %ps = kiln.shape %pk {end = 4 : i64, start = 0 : i64} : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %past = kiln.gather %ps, %c2 {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %hs = kiln.shape %h {end = 3 : i64, start = 0 : i64} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %len = kiln.gather %hs, %c1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %end = kiln.add %past, %len : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %r = kiln.range %past, %end, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %pos = kiln.unsqueeze %r, %c0 : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %pe = kiln.gather %ptab, %pos {axis = 0 : i64} : (tensor<32x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %x = kiln.add %h, %pe : (tensor<?x?x8xf32>, tensor<1x?x8xf32>) -> tensor<?x?x8xf32>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %kall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %o3 = kiln.reshape %o, %shape3 {allowzero = 0 : i64} : (tensor<1x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %y = kiln.add %x, %o3 : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %l = kiln.linear %y, %w {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %l : tensor<?x?x8xf32>
}

// -----

// Near-miss: positions numbered from 0, not from the past length (they
// would restart at every decode step), are not the engine's positions.
// CHECK-LABEL: module attributes {kiln.ragged_skipped = "no position_ids input, and the positions are neither the past length plus 0, 1, ...
// CHECK: kiln.range
// CHECK: kiln.attention
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x2x?x4xf32>, %k: tensor<1x2x?x4xf32>, %w: tensor<8x8xf32>)
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}) {
  %emb = kiln.constant dense<0.5> : tensor<16x8xf32>
  %ptab = kiln.constant dense<0.25> : tensor<32x8xf32>
  %c0 = kiln.constant dense<0> : tensor<i64>
  %c1 = kiln.constant dense<1> : tensor<i64>
  %shape3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %h = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %hs = kiln.shape %h {end = 3 : i64, start = 0 : i64} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %len = kiln.gather %hs, %c1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %end = kiln.add %c0, %len : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %r = kiln.range %c0, %end, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %pe = kiln.gather %ptab, %r {axis = 0 : i64} : (tensor<32x8xf32>, tensor<?xi64>) -> tensor<?x8xf32>
  %x = kiln.add %h, %pe : (tensor<?x?x8xf32>, tensor<?x8xf32>) -> tensor<?x?x8xf32>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %kall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %o3 = kiln.reshape %o, %shape3 {allowzero = 0 : i64} : (tensor<1x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %y = kiln.add %x, %o3 : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %l = kiln.linear %y, %w {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %l : tensor<?x?x8xf32>
}

// -----

// Near-miss: the past length also feeds something else than the positions
// (here the hidden states), which a ragged batch has no past tensors for.
// CHECK-LABEL: module attributes {kiln.ragged_skipped = "the input past_key_values.0.key feeds more than attention
// CHECK: kiln.attention
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x2x?x4xf32>, %k: tensor<1x2x?x4xf32>, %w: tensor<8x8xf32>)
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}) {
  %emb = kiln.constant dense<0.5> : tensor<16x8xf32>
  %ptab = kiln.constant dense<0.25> : tensor<32x8xf32>
  %c0 = kiln.constant dense<0> : tensor<1xi64>
  %c1 = kiln.constant dense<1> : tensor<i64>
  %c2 = kiln.constant dense<2> : tensor<i64>
  %shape3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %h = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %ps = kiln.shape %pk {end = 4 : i64, start = 0 : i64} : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %past = kiln.gather %ps, %c2 {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %hs = kiln.shape %h {end = 3 : i64, start = 0 : i64} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %len = kiln.gather %hs, %c1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %end = kiln.add %past, %len : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %r = kiln.range %past, %end, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %pos = kiln.unsqueeze %r, %c0 : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %pe = kiln.gather %ptab, %pos {axis = 0 : i64} : (tensor<32x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %pf = kiln.cast %past {to = 1 : i64} : (tensor<i64>) -> tensor<f32>
  %x0 = kiln.add %h, %pe : (tensor<?x?x8xf32>, tensor<1x?x8xf32>) -> tensor<?x?x8xf32>
  %x = kiln.mul %x0, %pf : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %kall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %o3 = kiln.reshape %o, %shape3 {allowzero = 0 : i64} : (tensor<1x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %y = kiln.add %x, %o3 : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %l = kiln.linear %y, %w {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %l : tensor<?x?x8xf32>
}

// -----

// Logits scaled after the head (Granite's logits / logits_scaling): the
// head is found through the division, which stays after the new head.
// CHECK-LABEL: module attributes {kiln.interface = "ragged"}
// CHECK: %[[ROWS:.*]] = kiln.gather {{.*}} -> tensor<?x?x8xf32>
// CHECK: %[[L:.*]] = kiln.linear %[[ROWS]], %{{.*}} -> tensor<?x?x8xf32>
// CHECK: %[[S:.*]] = kiln.div %[[L]], %{{.*}} : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
// CHECK: return %[[S]]
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %pos: tensor<?x?xi64> {kiln.name = "position_ids"},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x2x?x4xf32>, %k: tensor<1x2x?x4xf32>, %w: tensor<8x8xf32>)
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}) {
  %shape3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %scale = kiln.constant dense<8.0> : tensor<f32>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %kall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %o3 = kiln.reshape %o, %shape3 {allowzero = 0 : i64} : (tensor<1x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %l = kiln.linear %o3, %w {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %s = kiln.div %l, %scale : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  return %s : tensor<?x?x8xf32>
}

// -----

// Near-miss: logits scaled by a tensor, not a constant, are not the head's.
// CHECK-LABEL: module attributes {kiln.ragged_skipped = "the logits are not a linear of [batch, tokens, hidden] states"}
// CHECK: kiln.attention
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %pos: tensor<?x?xi64> {kiln.name = "position_ids"},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x2x?x4xf32>, %k: tensor<1x2x?x4xf32>, %w: tensor<8x8xf32>,
                %scale: tensor<f32>)
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}) {
  %shape3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %kall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %o3 = kiln.reshape %o, %shape3 {allowzero = 0 : i64} : (tensor<1x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %l = kiln.linear %o3, %w {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %s = kiln.div %l, %scale : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  return %s : tensor<?x?x8xf32>
}

// -----

// A model with position_ids that also numbers its tokens from the past
// length, for its mask only: the range dies with the mask, and position_ids
// stays the one positions input.
// CHECK-LABEL: module attributes {kiln.interface = "ragged"}
// CHECK: func.func @main(%{{.*}}: tensor<?x?xi64> {kiln.name = "input_ids"}, %{{.*}}: tensor<?x?xi64> {kiln.name = "position_ids"}, %{{.*}}: tensor<1x2x?x4xf32>, %{{.*}}: tensor<1x2x?x4xf32>, %{{.*}}: tensor<8x8xf32>, %{{.*}}: tensor<?xi64> {{{.*}}kiln.name = "kv_slots"}
// CHECK-NOT: position_ids
// CHECK-NOT: kiln.range
// CHECK: kiln.paged_attention
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %pos: tensor<?x?xi64> {kiln.name = "position_ids"},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x2x?x4xf32>, %k: tensor<1x2x?x4xf32>, %w: tensor<8x8xf32>)
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}) {
  %emb = kiln.constant dense<0.5> : tensor<16x8xf32>
  %c1 = kiln.constant dense<1> : tensor<i64>
  %c2 = kiln.constant dense<2> : tensor<i64>
  %shape3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %h = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %ps = kiln.shape %pk {end = 4 : i64, start = 0 : i64} : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %past = kiln.gather %ps, %c2 {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %hs = kiln.shape %h {end = 3 : i64, start = 0 : i64} : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %len = kiln.gather %hs, %c1 {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %end = kiln.add %past, %len : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %r = kiln.range %past, %end, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %rf = kiln.cast %r {to = 1 : i64} : (tensor<?xi64>) -> tensor<?xf32>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %kall, %rf {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xf32>) -> tensor<1x2x?x4xf32>
  %o3 = kiln.reshape %o, %shape3 {allowzero = 0 : i64} : (tensor<1x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %y = kiln.add %h, %o3 : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %l = kiln.linear %y, %w {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %l : tensor<?x?x8xf32>
}

// -----

// Logits soft-capped after the head (Gemma 2's final_logit_softcapping,
// c * tanh(x / c)): the head is found through the cap, which stays after it.
// CHECK-LABEL: module attributes {kiln.interface = "ragged"}
// CHECK: %[[L:.*]] = kiln.linear %{{.*}} -> tensor<?x?x8xf32>
// CHECK: %[[D:.*]] = kiln.div %[[L]], %{{.*}} : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
// CHECK: %[[T:.*]] = kiln.tanh %[[D]] : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
// CHECK: %[[C:.*]] = kiln.mul %[[T]], %{{.*}} : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
// CHECK: return %[[C]]
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %pos: tensor<?x?xi64> {kiln.name = "position_ids"},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x2x?x4xf32>, %k: tensor<1x2x?x4xf32>, %w: tensor<8x8xf32>)
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}) {
  %shape3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %cap = kiln.constant dense<30.0> : tensor<f32>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %kall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %o3 = kiln.reshape %o, %shape3 {allowzero = 0 : i64} : (tensor<1x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %l = kiln.linear %o3, %w {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %d = kiln.div %l, %cap : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  %t = kiln.tanh %d : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %c = kiln.mul %t, %cap : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  return %c : tensor<?x?x8xf32>
}

// -----

// Near-miss: a bare tanh of the logits is no soft-cap (no scaling into and
// out of it) and not the head's.
// CHECK-LABEL: module attributes {kiln.ragged_skipped = "the logits are not a linear of [batch, tokens, hidden] states"}
// CHECK: kiln.attention
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %pos: tensor<?x?xi64> {kiln.name = "position_ids"},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %q: tensor<1x2x?x4xf32>, %k: tensor<1x2x?x4xf32>, %w: tensor<8x8xf32>)
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}) {
  %shape3 = kiln.constant dense<[1, -1, 8]> : tensor<3xi64>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %kall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %o3 = kiln.reshape %o, %shape3 {allowzero = 0 : i64} : (tensor<1x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  %l = kiln.linear %o3, %w {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %t = kiln.tanh %l : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %t : tensor<?x?x8xf32>
}
