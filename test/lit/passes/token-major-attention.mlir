// RUN: kiln-opt %s -split-input-file -kiln-token-major-attention | FileCheck %s
// kiln-token-major-attention: paged_attention (and the rotaries before it)
// read q, k and v token-major [1, T, H, D] as the projections write them,
// with layout = "bshd"; the transposes around attention disappear. Anything
// that does not match exactly is left alone.

// GQA (4 query heads, 2 KV heads) with rotary on q and k.
// CHECK-LABEL: func.func @gqa_rotary
// CHECK-SAME: (%[[XQ:.*]]: tensor<1x?x4x4xf32>, %[[XK:.*]]: tensor<1x?x2x4xf32>, %[[XV:.*]]: tensor<1x?x2x4xf32>, %[[COS:.*]]: tensor<1x1x?x4xf32>, %[[SIN:.*]]: tensor<1x1x?x4xf32>
// CHECK-NOT: kiln.transpose
// CHECK: %[[SHAPE:.*]] = kiln.constant {name = "rotary_table.token_major.shape"} dense<[0, -1, 1, 4]> : tensor<4xi64>
// CHECK: %[[C:.*]] = kiln.reshape %[[COS]], %[[SHAPE]] {allowzero = 0 : i64} : (tensor<1x1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x1x4xf32>
// CHECK: %[[S:.*]] = kiln.reshape %[[SIN]], %{{.*}} {allowzero = 0 : i64} : (tensor<1x1x?x4xf32>, tensor<4xi64>) -> tensor<1x?x1x4xf32>
// CHECK: %[[Q:.*]] = kiln.rotary %[[XQ]], %[[C]], %[[S]] {interleaved = 0 : i64, rotary_dim = 4 : i64} : (tensor<1x?x4x4xf32>, tensor<1x?x1x4xf32>, tensor<1x?x1x4xf32>) -> tensor<1x?x4x4xf32>
// CHECK: %[[K:.*]] = kiln.rotary %[[XK]], %[[C]], %[[S]]
// CHECK: %[[O:.*]] = kiln.paged_attention %[[Q]], %[[K]], %[[XV]], {{.*}} {layout = "bshd", scale = 5.000000e-01 : f32} : ({{.*}}) -> tensor<1x?x4x4xf32>
// CHECK-NOT: kiln.transpose
// CHECK: return %[[O]] : tensor<1x?x4x4xf32>
func.func @gqa_rotary(%xq: tensor<1x?x4x4xf32>, %xk: tensor<1x?x2x4xf32>, %xv: tensor<1x?x2x4xf32>,
                      %cos: tensor<1x1x?x4xf32>, %sin: tensor<1x1x?x4xf32>,
                      %kc: tensor<?x2x?x4xf32>, %vc: tensor<?x2x?x4xf32>, %slots: tensor<?xi64>,
                      %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>) -> tensor<1x?x4x4xf32> {
  %tq = kiln.transpose %xq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x4xf32>) -> tensor<1x4x?x4xf32>
  %tk = kiln.transpose %xk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %tv = kiln.transpose %xv {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %q = kiln.rotary %tq, %cos, %sin {interleaved = 0 : i64, rotary_dim = 4 : i64} : (tensor<1x4x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x4x?x4xf32>
  %k = kiln.rotary %tk, %cos, %sin {interleaved = 0 : i64, rotary_dim = 4 : i64} : (tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<1x2x?x4xf32>
  %o = kiln.paged_attention %q, %k, %tv, %kc, %vc, %slots, %qs, %cl, %bt {scale = 0.5 : f32} : (tensor<1x4x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x4x?x4xf32>
  %y = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x?x4xf32>) -> tensor<1x?x4x4xf32>
  return %y : tensor<1x?x4x4xf32>
}

// -----

// MQA without rotary (GPT-2-like, one KV head), bf16.
// CHECK-LABEL: func.func @mqa_plain
// CHECK-SAME: (%[[XQ:.*]]: tensor<1x?x4x8xbf16>, %[[XK:.*]]: tensor<1x?x1x8xbf16>, %[[XV:.*]]: tensor<1x?x1x8xbf16>
// CHECK-NOT: kiln.transpose
// A window and a soft-cap carry over.
// CHECK: %[[O:.*]] = kiln.paged_attention %[[XQ]], %[[XK]], %[[XV]], {{.*}} {layout = "bshd", scale = 2.500000e-01 : f32, softcap = 5.000000e+01 : f32, window = 8 : i64}
// CHECK-NOT: kiln.transpose
// CHECK: return %[[O]] : tensor<1x?x4x8xbf16>
func.func @mqa_plain(%xq: tensor<1x?x4x8xbf16>, %xk: tensor<1x?x1x8xbf16>, %xv: tensor<1x?x1x8xbf16>,
                     %kc: tensor<?x1x?x8xbf16>, %vc: tensor<?x1x?x8xbf16>, %slots: tensor<?xi64>,
                     %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>) -> tensor<1x?x4x8xbf16> {
  %tq = kiln.transpose %xq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x4x8xbf16>) -> tensor<1x4x?x8xbf16>
  %tk = kiln.transpose %xk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x1x8xbf16>) -> tensor<1x1x?x8xbf16>
  %tv = kiln.transpose %xv {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x1x8xbf16>) -> tensor<1x1x?x8xbf16>
  %o = kiln.paged_attention %tq, %tk, %tv, %kc, %vc, %slots, %qs, %cl, %bt {scale = 0.25 : f32, softcap = 50.0 : f32, window = 8 : i64} : (tensor<1x4x?x8xbf16>, tensor<1x1x?x8xbf16>, tensor<1x1x?x8xbf16>, tensor<?x1x?x8xbf16>, tensor<?x1x?x8xbf16>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x4x?x8xbf16>
  %y = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x?x8xbf16>) -> tensor<1x?x4x8xbf16>
  return %y : tensor<1x?x4x8xbf16>
}

// -----

// Partial interleaved rotary (R = 2 of D = 4), MHA.
// CHECK-LABEL: func.func @partial_interleaved
// CHECK-NOT: kiln.transpose
// CHECK: kiln.constant {{.*}}dense<[0, -1, 1, 2]> : tensor<4xi64>
// CHECK: kiln.rotary %{{.*}} {interleaved = 1 : i64, rotary_dim = 2 : i64} : (tensor<1x?x2x4xf32>, tensor<1x?x1x2xf32>, tensor<1x?x1x2xf32>) -> tensor<1x?x2x4xf32>
// CHECK: kiln.rotary
// CHECK: kiln.paged_attention {{.*}} {layout = "bshd", scale = 5.000000e-01 : f32}
// CHECK-NOT: kiln.transpose
func.func @partial_interleaved(%xq: tensor<1x?x2x4xf32>, %xk: tensor<1x?x2x4xf32>, %xv: tensor<1x?x2x4xf32>,
                               %cos: tensor<1x1x?x2xf32>, %sin: tensor<1x1x?x2xf32>,
                               %kc: tensor<?x2x?x4xf32>, %vc: tensor<?x2x?x4xf32>, %slots: tensor<?xi64>,
                               %qs: tensor<?xi64>, %cl: tensor<?xi64>, %bt: tensor<?x?xi64>) -> tensor<1x?x2x4xf32> {
  %tq = kiln.transpose %xq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %tk = kiln.transpose %xk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %tv = kiln.transpose %xv {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %q = kiln.rotary %tq, %cos, %sin {interleaved = 1 : i64, rotary_dim = 2 : i64} : (tensor<1x2x?x4xf32>, tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>) -> tensor<1x2x?x4xf32>
  %k = kiln.rotary %tk, %cos, %sin {interleaved = 1 : i64, rotary_dim = 2 : i64} : (tensor<1x2x?x4xf32>, tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>) -> tensor<1x2x?x4xf32>
  %o = kiln.paged_attention %q, %k, %tv, %kc, %vc, %slots, %qs, %cl, %bt {scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x2x?x4xf32>
  %y = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x?x4xf32>) -> tensor<1x?x2x4xf32>
  return %y : tensor<1x?x2x4xf32>
}

// -----

// Near-miss: the transposed q is also returned, so it must stay.
// CHECK-LABEL: func.func @q_read_elsewhere
// CHECK: kiln.transpose
// CHECK: kiln.paged_attention
// CHECK-NOT: layout = "bshd"
// CHECK: kiln.transpose
func.func @q_read_elsewhere(%xq: tensor<1x?x2x4xf32>, %xk: tensor<1x?x2x4xf32>,
                            %kc: tensor<?x2x?x4xf32>, %slots: tensor<?xi64>, %bt: tensor<?x?xi64>)
    -> (tensor<1x?x2x4xf32>, tensor<1x2x?x4xf32>) {
  %tq = kiln.transpose %xq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %tk = kiln.transpose %xk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %tv = kiln.transpose %xk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %o = kiln.paged_attention %tq, %tk, %tv, %kc, %kc, %slots, %slots, %slots, %bt {scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x2x?x4xf32>
  %y = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x?x4xf32>) -> tensor<1x?x2x4xf32>
  return %y, %tq : tensor<1x?x2x4xf32>, tensor<1x2x?x4xf32>
}

// -----

// Near-miss: the result is not transposed back with [0, 2, 1, 3].
// CHECK-LABEL: func.func @other_perm_back
// CHECK-COUNT-3: kiln.transpose
// CHECK: kiln.paged_attention
// CHECK-NOT: layout = "bshd"
// CHECK: kiln.transpose %{{.*}} {perm = array<i64: 0, 2, 3, 1>}
func.func @other_perm_back(%xq: tensor<1x?x2x4xf32>, %xk: tensor<1x?x2x4xf32>, %xv: tensor<1x?x2x4xf32>,
                           %kc: tensor<?x2x?x4xf32>, %slots: tensor<?xi64>, %bt: tensor<?x?xi64>) -> tensor<1x?x4x2xf32> {
  %tq = kiln.transpose %xq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %tk = kiln.transpose %xk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %tv = kiln.transpose %xv {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %o = kiln.paged_attention %tq, %tk, %tv, %kc, %kc, %slots, %slots, %slots, %bt {scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x2x?x4xf32>
  %y = kiln.transpose %o {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x?x4xf32>) -> tensor<1x?x4x2xf32>
  return %y : tensor<1x?x4x2xf32>
}

// -----

// Near-miss: cos/sin vary per head ([1, 2, T, 4]), so their token-major
// form is not a reshape.
// CHECK-LABEL: func.func @per_head_tables
// CHECK-COUNT-3: kiln.transpose
// CHECK: kiln.rotary
// CHECK: kiln.paged_attention
// CHECK-NOT: layout = "bshd"
// CHECK: kiln.transpose
func.func @per_head_tables(%xq: tensor<1x?x2x4xf32>, %xk: tensor<1x?x2x4xf32>, %xv: tensor<1x?x2x4xf32>,
                           %cos: tensor<1x2x?x4xf32>, %kc: tensor<?x2x?x4xf32>, %slots: tensor<?xi64>,
                           %bt: tensor<?x?xi64>) -> tensor<1x?x2x4xf32> {
  %tq = kiln.transpose %xq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %tk = kiln.transpose %xk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %tv = kiln.transpose %xv {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %q = kiln.rotary %tq, %cos, %cos {interleaved = 0 : i64, rotary_dim = 4 : i64} : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %o = kiln.paged_attention %q, %tk, %tv, %kc, %kc, %slots, %slots, %slots, %bt {scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x2x?x4xf32>
  %y = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x?x4xf32>) -> tensor<1x?x2x4xf32>
  return %y : tensor<1x?x2x4xf32>
}

// -----

// Near-miss: v is not a transpose (already head-major).
// CHECK-LABEL: func.func @v_not_transposed
// CHECK-COUNT-2: kiln.transpose
// CHECK: kiln.paged_attention
// CHECK-NOT: layout = "bshd"
func.func @v_not_transposed(%xq: tensor<1x?x2x4xf32>, %xk: tensor<1x?x2x4xf32>, %v: tensor<1x2x?x4xf32>,
                            %kc: tensor<?x2x?x4xf32>, %slots: tensor<?xi64>, %bt: tensor<?x?xi64>) -> tensor<1x?x2x4xf32> {
  %tq = kiln.transpose %xq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %tk = kiln.transpose %xk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %o = kiln.paged_attention %tq, %tk, %v, %kc, %kc, %slots, %slots, %slots, %bt {scale = 0.5 : f32} : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi64>) -> tensor<1x2x?x4xf32>
  %y = kiln.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x?x4xf32>) -> tensor<1x?x2x4xf32>
  return %y : tensor<1x?x2x4xf32>
}
