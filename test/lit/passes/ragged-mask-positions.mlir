// RUN: kiln-opt %s -split-input-file -kiln-ragged | FileCheck %s
// kiln-ragged on exports that number positions from the attention mask's
// running sum (OPT's `cumsum(mask) * mask - 1`, sliced from the past length;
// or `cumsum(mask) - 1` with the padding filled, sliced to the last seq_len):
// on a ragged batch (no padding) that is the engine's position_ids, shifted
// by what the chain adds. Near misses keep the dense interface.

// CHECK-LABEL: module attributes {kiln.interface = "ragged"}
// CHECK: func.func @main(%{{.*}}: tensor<?x?xi64> {{{.*}}kiln.name = "input_ids"}, %[[POS:.*]]: tensor<?x?xi64> {{{.*}}kiln.name = "position_ids"}
// CHECK-NOT: kiln.cumsum
// The chain's -1 and the running sum's +1 cancel: no shift, then OPT's + 2.
// CHECK: %[[P:.*]] = kiln.reshape %[[POS]], %{{.*}} {allowzero = 0 : i64} : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<?x?xi64>
// CHECK-NEXT: %[[Q:.*]] = kiln.add %[[P]], %{{.*}} : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
// CHECK-NEXT: kiln.gather %{{.*}}, %[[Q]]
// CHECK: kiln.paged_attention
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids", kiln.dims = ["batch", "seq"]},
                %mask: tensor<?x?xi64> {kiln.name = "attention_mask", kiln.dims = ["batch", "total"]},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %pv: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.value"})
    -> (tensor<?x?x8xf32> {kiln.name = "logits", kiln.dims = ["batch", "seq", ""]},
        tensor<?x2x?x4xf32> {kiln.name = "present.0.key"},
        tensor<?x2x?x4xf32> {kiln.name = "present.0.value"}) {
  %emb = kiln.constant dense<0.5> : tensor<16x8xf32>
  %wpos = kiln.constant dense<0.25> : tensor<40x8xf32>
  %wq = kiln.constant dense<0.25> : tensor<8x16xf32>
  %wk = kiln.constant dense<0.125> : tensor<8x8xf32>
  %wh = kiln.constant dense<1.0> : tensor<16x8xf32>
  %shape = kiln.constant dense<[1, -1, 2, 4]> : tensor<4xi64>
  %shape4 = kiln.constant dense<[1, -1, 4, 4]> : tensor<4xi64>
  %shape3 = kiln.constant dense<[1, -1, 16]> : tensor<3xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %two = kiln.constant dense<2> : tensor<i64>
  %big = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %i2 = kiln.constant dense<2> : tensor<1xi64>
  %z = kiln.constant dense<0> : tensor<1xi64>
  // OPT: (cumsum(mask, 1) * mask) - 1, from the past length on, + 2.
  %cs = kiln.cumsum %mask, %one {exclusive = 0 : i64, reverse = 0 : i64} : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?xi64>
  %cm = kiln.mul %cs, %mask : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  %c1 = kiln.sub %cm, %one : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?xi64>
  %pshape = kiln.shape %pk {end = 4 : i64, start = 0 : i64} : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %past = kiln.gather %pshape, %i2 {axis = 0 : i64} : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %pos = kiln.slice %c1, %past, %big axes %one : (tensor<?x?xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xi64>
  %pos2 = kiln.add %pos, %two : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %pe = kiln.gather %wpos, %pos2 {axis = 0 : i64} : (tensor<40x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %te = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %h = kiln.add %te, %pe : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %q0 = kiln.linear %h, %wq {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %k0 = kiln.linear %h, %wk {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %q1 = kiln.reshape %q0, %shape4 {allowzero = 0 : i64} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<1x?x4x4xf32>
  %k1 = kiln.reshape %k0, %shape {allowzero = 0 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %q = kiln.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x4xf32>) -> tensor<1x4x?x4xf32>
  %k = kiln.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vall = kiln.concat %pv, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %vall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x4x?x4xf32>
  %ot = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x?x4xf32>) -> tensor<1x?x4x4xf32>
  %o3 = kiln.reshape %ot, %shape3 {allowzero = 0 : i64} : (tensor<1x?x4x4xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %logits = kiln.linear %o3, %wh {activation = "none"} : (tensor<?x?x16xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %logits, %kall, %vall : tensor<?x?x8xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// Near miss: the running sum over the batch dim (axis 0) is not a position.
// CHECK-LABEL: module attributes {kiln.ragged_skipped = "no position_ids input, and the positions are neither the past length plus 0, 1, ... nor the attention mask's running sum
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids", kiln.dims = ["batch", "seq"]},
                %mask: tensor<?x?xi64> {kiln.name = "attention_mask", kiln.dims = ["batch", "total"]},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %pv: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.value"})
    -> (tensor<?x?x8xf32> {kiln.name = "logits", kiln.dims = ["batch", "seq", ""]},
        tensor<?x2x?x4xf32> {kiln.name = "present.0.key"},
        tensor<?x2x?x4xf32> {kiln.name = "present.0.value"}) {
  %emb = kiln.constant dense<0.5> : tensor<16x8xf32>
  %wpos = kiln.constant dense<0.25> : tensor<40x8xf32>
  %wq = kiln.constant dense<0.25> : tensor<8x16xf32>
  %wk = kiln.constant dense<0.125> : tensor<8x8xf32>
  %wh = kiln.constant dense<1.0> : tensor<16x8xf32>
  %shape = kiln.constant dense<[1, -1, 2, 4]> : tensor<4xi64>
  %shape4 = kiln.constant dense<[1, -1, 4, 4]> : tensor<4xi64>
  %shape3 = kiln.constant dense<[1, -1, 16]> : tensor<3xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %zero = kiln.constant dense<0> : tensor<1xi64>
  %big = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %i2 = kiln.constant dense<2> : tensor<1xi64>
  %cs = kiln.cumsum %mask, %zero {exclusive = 0 : i64, reverse = 0 : i64} : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?xi64>
  %c1 = kiln.sub %cs, %one : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?xi64>
  %pshape = kiln.shape %pk {end = 4 : i64, start = 0 : i64} : (tensor<?x2x?x4xf32>) -> tensor<4xi64>
  %past = kiln.gather %pshape, %i2 {axis = 0 : i64} : (tensor<4xi64>, tensor<1xi64>) -> tensor<1xi64>
  %pos = kiln.slice %c1, %past, %big axes %one : (tensor<?x?xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xi64>
  %pe = kiln.gather %wpos, %pos {axis = 0 : i64} : (tensor<40x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %te = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %h = kiln.add %te, %pe : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %q0 = kiln.linear %h, %wq {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %k0 = kiln.linear %h, %wk {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %q1 = kiln.reshape %q0, %shape4 {allowzero = 0 : i64} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<1x?x4x4xf32>
  %k1 = kiln.reshape %k0, %shape {allowzero = 0 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %q = kiln.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x4xf32>) -> tensor<1x4x?x4xf32>
  %k = kiln.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vall = kiln.concat %pv, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %vall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x4x?x4xf32>
  %ot = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x?x4xf32>) -> tensor<1x?x4x4xf32>
  %o3 = kiln.reshape %ot, %shape3 {allowzero = 0 : i64} : (tensor<1x?x4x4xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %logits = kiln.linear %o3, %wh {activation = "none"} : (tensor<?x?x16xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %logits, %kall, %vall : tensor<?x?x8xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// CHECK-LABEL: module attributes {kiln.interface = "ragged"}
// CHECK: %[[P:.*]] = kiln.reshape %arg1, %{{.*}} {allowzero = 0 : i64} : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<?x?xi64>
// CHECK-NEXT: %[[ONE:.*]] = kiln.constant dense<1> : tensor<i64>
// CHECK-NEXT: %[[Q:.*]] = kiln.add %[[P]], %[[ONE]] : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
// CHECK-NEXT: kiln.add %[[Q]], %{{.*}}
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids", kiln.dims = ["batch", "seq"]},
                %mask: tensor<?x?xi64> {kiln.name = "attention_mask", kiln.dims = ["batch", "total"]},
                %pk: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"},
                %pv: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.value"})
    -> (tensor<?x?x8xf32> {kiln.name = "logits", kiln.dims = ["batch", "seq", ""]},
        tensor<?x2x?x4xf32> {kiln.name = "present.0.key"},
        tensor<?x2x?x4xf32> {kiln.name = "present.0.value"}) {
  %emb = kiln.constant dense<0.5> : tensor<16x8xf32>
  %wpos = kiln.constant dense<0.25> : tensor<40x8xf32>
  %wq = kiln.constant dense<0.25> : tensor<8x16xf32>
  %wk = kiln.constant dense<0.125> : tensor<8x8xf32>
  %wh = kiln.constant dense<1.0> : tensor<16x8xf32>
  %shape = kiln.constant dense<[1, -1, 2, 4]> : tensor<4xi64>
  %shape4 = kiln.constant dense<[1, -1, 4, 4]> : tensor<4xi64>
  %shape3 = kiln.constant dense<[1, -1, 16]> : tensor<3xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %two = kiln.constant dense<2> : tensor<i64>
  %big = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %i2 = kiln.constant dense<2> : tensor<1xi64>
  %z = kiln.constant dense<0> : tensor<1xi64>
  // where(mask == 0, 1, cumsum(mask)) over the last seq_len tokens: + 1.
  %cs = kiln.cumsum %mask, %one {exclusive = 0 : i64, reverse = 0 : i64} : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?xi64>
  %zs = kiln.constant dense<0> : tensor<i64>
  %pad = kiln.equal %mask, %zs : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi1>
  %c1 = kiln.where %pad, %one, %cs : (tensor<?x?xi1>, tensor<1xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  %ishape = kiln.shape %ids {end = 2 : i64, start = 0 : i64} : (tensor<?x?xi64>) -> tensor<2xi64>
  %seq = kiln.gather %ishape, %one {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %nseq = kiln.neg %seq : (tensor<1xi64>) -> tensor<1xi64>
  %pos = kiln.slice %c1, %nseq, %big axes %one : (tensor<?x?xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xi64>
  %pos2 = kiln.add %pos, %two : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %pe = kiln.gather %wpos, %pos2 {axis = 0 : i64} : (tensor<40x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %te = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %h = kiln.add %te, %pe : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %q0 = kiln.linear %h, %wq {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %k0 = kiln.linear %h, %wk {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %q1 = kiln.reshape %q0, %shape4 {allowzero = 0 : i64} : (tensor<?x?x16xf32>, tensor<4xi64>) -> tensor<1x?x4x4xf32>
  %k1 = kiln.reshape %k0, %shape {allowzero = 0 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %q = kiln.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x4xf32>) -> tensor<1x4x?x4xf32>
  %k = kiln.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %kall = kiln.concat %pk, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vall = kiln.concat %pv, %k {axis = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %o = kiln.attention %q, %kall, %vall {causal = 1 : i64, scale = 0.5 : f32} : (tensor<1x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<1x4x?x4xf32>
  %ot = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x?x4xf32>) -> tensor<1x?x4x4xf32>
  %o3 = kiln.reshape %ot, %shape3 {allowzero = 0 : i64} : (tensor<1x?x4x4xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %logits = kiln.linear %o3, %wh {activation = "none"} : (tensor<?x?x16xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %logits, %kall, %vall : tensor<?x?x8xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

