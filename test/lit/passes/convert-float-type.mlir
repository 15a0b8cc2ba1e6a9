// RUN: kiln-opt %s -split-input-file -kiln-convert-float-type=to=f16 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-convert-float-type=to=bf16 | FileCheck %s --check-prefix=BF16
// RUN: not kiln-opt %s -split-input-file -kiln-convert-float-type=to=f8 2>&1 | FileCheck %s --check-prefix=BAD
// kiln-convert-float-type: f32 weights and activations become half, the KV
// cache takes the same type, the logits stay f32; integer tensors, values
// computed from integer data and explicit casts to integers are untouched.

// BAD: to must be f16 or bf16, got 'f8'

// The weight is rounded to nearest even: 0.1 is 0x2E66 in f16, 0x3DCD in bf16.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[IDS:.*]]: tensor<?x?xi64> {kiln.name = "input_ids"}
// CHECK-SAME: %[[PK:.*]]: tensor<1x2x?x4xf16> {kiln.name = "past_key_values.0.key"}
// CHECK-SAME: -> (tensor<?x?x8xf32> {kiln.name = "logits"}, tensor<1x2x?x4xf16> {kiln.name = "present.0.key"})
// CHECK-DAG: %[[EMB:.*]] = kiln.constant dense<9.997550e-02> : tensor<16x8xf16>
// CHECK-DAG: %[[SHAPE:.*]] = kiln.constant dense<[1, -1, 2, 4]> : tensor<4xi64>
// CHECK: %[[H:.*]] = kiln.gather %[[EMB]], %[[IDS]] {axis = 0 : i64} : (tensor<16x8xf16>, tensor<?x?xi64>) -> tensor<?x?x8xf16>
// CHECK: %[[K:.*]] = kiln.reshape %[[H]], %[[SHAPE]] {{.*}} -> tensor<1x?x2x4xf16>
// CHECK: %[[KT:.*]] = kiln.transpose %[[K]] {{.*}} -> tensor<1x2x?x4xf16>
// CHECK: %[[KALL:.*]] = kiln.concat %[[PK]], %[[KT]] {{.*}} -> tensor<1x2x?x4xf16>
// CHECK: %[[N:.*]] = kiln.rms_norm %[[H]], %{{.*}} {{.*}} : (tensor<?x?x8xf16>, tensor<8xf32>) -> tensor<?x?x8xf16>
// CHECK: %[[L:.*]] = kiln.linear %[[N]], %[[EMBT:.*]] {activation = "none"} : (tensor<?x?x8xf16>, tensor<8x8xf16>) -> tensor<?x?x8xf16>
// CHECK: %[[OUT:.*]] = kiln.cast %[[L]] {to = 1 : i64} : (tensor<?x?x8xf16>) -> tensor<?x?x8xf32>
// CHECK: return %[[OUT]], %[[KALL]] : tensor<?x?x8xf32>, tensor<1x2x?x4xf16>
// BF16-LABEL: func.func @main
// BF16: kiln.constant dense<1.000980e-01> : tensor<16x8xbf16>
// BF16: kiln.cast %{{.*}} {to = 1 : i64} : (tensor<?x?x8xbf16>) -> tensor<?x?x8xf32>
func.func @main(%ids: tensor<?x?xi64> {kiln.name = "input_ids"},
                %pk: tensor<1x2x?x4xf32> {kiln.name = "past_key_values.0.key"})
    -> (tensor<?x?x8xf32> {kiln.name = "logits"}, tensor<1x2x?x4xf32> {kiln.name = "present.0.key"}) {
  %emb = kiln.constant dense<0.1> : tensor<16x8xf32>
  %g = kiln.constant dense<1.5> : tensor<8xf32>
  %w = kiln.constant dense<0.25> : tensor<8x8xf32>
  %shape = kiln.constant dense<[1, -1, 2, 4]> : tensor<4xi64>
  %h = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %k = kiln.reshape %h, %shape {allowzero = 0 : i64} : (tensor<?x?x8xf32>, tensor<4xi64>) -> tensor<1x?x2x4xf32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %kall = kiln.concat %pk, %kt {axis = 2 : i64} : (tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) -> tensor<1x2x?x4xf32>
  %n = kiln.rms_norm %h, %g {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %l = kiln.linear %n, %w {activation = "none"} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %l, %kall : tensor<?x?x8xf32>, tensor<1x2x?x4xf32>
}

// -----

// Near-miss: positions cast to f32 and what is computed from them with
// constants (rotary angles) stay f32, with one Cast to f16 where they meet
// the activations; an explicit Cast to i64, the shape tensors and the
// integer constants are untouched.
// CHECK-LABEL: func.func @positions
// CHECK-DAG: %[[FREQ:.*]] = kiln.constant dense<5.000000e-01> : tensor<1x4xf32>
// CHECK-DAG: %[[ONE:.*]] = kiln.constant dense<1> : tensor<1xi64>
// CHECK: %[[PF:.*]] = kiln.cast %arg1 {to = 1 : i64} : (tensor<?x1xi64>) -> tensor<?x1xf32>
// CHECK: %[[ANG:.*]] = kiln.mul %[[PF]], %[[FREQ]] : (tensor<?x1xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
// CHECK: %[[COS:.*]] = kiln.cos %[[ANG]] : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK: %[[COS16:.*]] = kiln.cast %[[COS]] {to = 2 : i64} : (tensor<?x4xf32>) -> tensor<?x4xf16>
// CHECK: %[[X:.*]] = kiln.mul %arg0, %[[COS16]] : (tensor<?x4xf16>, tensor<?x4xf16>) -> tensor<?x4xf16>
// CHECK: %[[I:.*]] = kiln.cast %[[X]] {to = 8 : i64} : (tensor<?x4xf16>) -> tensor<?x4xi64>
// CHECK: %[[S:.*]] = kiln.add %[[I]], %[[ONE]] : (tensor<?x4xi64>, tensor<1xi64>) -> tensor<?x4xi64>
// CHECK: return %[[S]], %[[ANG]] : tensor<?x4xi64>, tensor<?x4xf32>
func.func @positions(%x: tensor<?x4xf32> {kiln.name = "x"}, %pos: tensor<?x1xi64> {kiln.name = "position_ids"})
    -> (tensor<?x4xi64> {kiln.name = "ids"}, tensor<?x4xf32> {kiln.name = "angles"}) {
  %freq = kiln.constant dense<0.5> : tensor<1x4xf32>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %pf = kiln.cast %pos {to = 1 : i64} : (tensor<?x1xi64>) -> tensor<?x1xf32>
  %ang = kiln.mul %pf, %freq : (tensor<?x1xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  %cos = kiln.cos %ang : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %y = kiln.mul %x, %cos : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %i = kiln.cast %y {to = 8 : i64} : (tensor<?x4xf32>) -> tensor<?x4xi64>
  %s = kiln.add %i, %one : (tensor<?x4xi64>, tensor<1xi64>) -> tensor<?x4xi64>
  return %s, %ang : tensor<?x4xi64>, tensor<?x4xf32>
}

// -----

// A constant read by an f32 op and by a half op is converted for the half
// one only; a Cast to f32 of a converted value (an identity in the f32
// graph) disappears.
// CHECK-LABEL: func.func @shared
// CHECK-DAG: %[[C32:.*]] = kiln.constant dense<3.000000e+00> : tensor<4xf32>
// CHECK-DAG: %[[C16:.*]] = kiln.constant dense<3.000000e+00> : tensor<4xf16>
// CHECK: %[[PF:.*]] = kiln.cast %arg1 {to = 1 : i64}
// CHECK: kiln.add %[[PF]], %[[C32]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NOT: {to = 1 : i64} : (tensor<4xf16>
// CHECK: kiln.add %arg0, %[[C16]] : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
func.func @shared(%x: tensor<4xf32>, %pos: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c = kiln.constant dense<3.0> : tensor<4xf32>
  %pf = kiln.cast %pos {to = 1 : i64} : (tensor<4xi64>) -> tensor<4xf32>
  %a = kiln.add %pf, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %x32 = kiln.cast %x {to = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %b = kiln.add %x32, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// A constant moved by integer data (inv_freq expanded to the batch, as Hugging
// Face's rotary embedding does) takes its readers' type: multiplied by the f32
// positions, it stays f32 with the angles (in bf16, an angle of 63 would round
// by up to 0.125 rad). Near-miss: an embedding Gather of a weight is moved by
// data too, but its reader computes activations, so the table and the Gather
// become half.
// BF16-LABEL: func.func @moved
// BF16-DAG: %[[FREQ:.*]] = kiln.constant dense<3.000000e-01> : tensor<1x4xf32>
// BF16-DAG: %[[TABLE:.*]] = kiln.constant dense<1.000980e-01> : tensor<16x4xbf16>
// BF16: %[[FE:.*]] = kiln.expand %[[FREQ]], %{{.*}} : (tensor<1x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
// BF16: %[[PF:.*]] = kiln.cast %arg1 {to = 1 : i64} : (tensor<?x1xi64>) -> tensor<?x1xf32>
// BF16: %[[ANG:.*]] = kiln.mul %[[FE]], %[[PF]] : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
// BF16: %[[COS:.*]] = kiln.cos %[[ANG]] : (tensor<?x4xf32>) -> tensor<?x4xf32>
// BF16: %[[COSH:.*]] = kiln.cast %[[COS]] {to = 3 : i64} : (tensor<?x4xf32>) -> tensor<?x4xbf16>
// BF16: kiln.mul %arg0, %[[COSH]] : (tensor<?x4xbf16>, tensor<?x4xbf16>) -> tensor<?x4xbf16>
// BF16: %[[E:.*]] = kiln.gather %[[TABLE]], %arg2 {axis = 0 : i64} : (tensor<16x4xbf16>, tensor<?xi64>) -> tensor<?x4xbf16>
// BF16: kiln.mul %[[E]], %[[E]] : (tensor<?x4xbf16>, tensor<?x4xbf16>) -> tensor<?x4xbf16>
func.func @moved(%x: tensor<?x4xf32> {kiln.name = "x"}, %pos: tensor<?x1xi64> {kiln.name = "position_ids"},
                 %ids: tensor<?xi64> {kiln.name = "input_ids"}) -> (tensor<?x4xf32> {kiln.name = "y"}) {
  %freq = kiln.constant dense<0.3> : tensor<1x4xf32>
  %table = kiln.constant dense<0.1> : tensor<16x4xf32>
  %s = kiln.shape %pos {end = 2 : i64, start = 0 : i64} : (tensor<?x1xi64>) -> tensor<2xi64>
  %fe = kiln.expand %freq, %s : (tensor<1x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %pf = kiln.cast %pos {to = 1 : i64} : (tensor<?x1xi64>) -> tensor<?x1xf32>
  %ang = kiln.mul %fe, %pf : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  %cos = kiln.cos %ang : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %y = kiln.mul %x, %cos : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %e = kiln.gather %table, %ids {axis = 0 : i64} : (tensor<16x4xf32>, tensor<?xi64>) -> tensor<?x4xf32>
  %d = kiln.mul %e, %e : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %out = kiln.add %y, %d : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %out : tensor<?x4xf32>
}

// -----

// A norm's scale and bias and rotary's cos/sin stay f32 beside half
// activations (the kernels read them in their own dtype): no Cast meets them.
// Near-miss: a linear's weight and bias, also constants read by a half op,
// become half.
// BF16-LABEL: func.func @f32_params
// BF16-DAG: %[[G:.*]] = kiln.constant dense<1.500000e+00> : tensor<8xf32>
// BF16-DAG: %[[W:.*]] = kiln.constant dense<2.500000e-01> : tensor<8x8xbf16>
// BF16-DAG: %[[B:.*]] = kiln.constant dense<5.000000e-01> : tensor<8xbf16>
// BF16: %[[N:.*]] = kiln.rms_norm %arg0, %[[G]] {{.*}} : (tensor<?x8xbf16>, tensor<8xf32>) -> tensor<?x8xbf16>
// BF16: %[[L:.*]] = kiln.linear %[[N]], %[[W]], %[[B]] {{.*}} : (tensor<?x8xbf16>, tensor<8x8xbf16>, tensor<8xbf16>) -> tensor<?x8xbf16>
// BF16: %[[COS:.*]] = kiln.cos %{{.*}} : (tensor<?x8xf32>) -> tensor<?x8xf32>
// BF16-NOT: kiln.cast %[[COS]]
// BF16: kiln.rotary %[[L]], %[[COS]], %[[COS]] {{.*}} : (tensor<?x8xbf16>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xbf16>
func.func @f32_params(%x: tensor<?x8xf32> {kiln.name = "x"}, %pos: tensor<?x1xi64> {kiln.name = "position_ids"})
    -> (tensor<?x8xf32> {kiln.name = "y"}) {
  %g = kiln.constant dense<1.5> : tensor<8xf32>
  %w = kiln.constant dense<0.25> : tensor<8x8xf32>
  %bias = kiln.constant dense<0.5> : tensor<8xf32>
  %freq = kiln.constant dense<0.5> : tensor<1x8xf32>
  %n = kiln.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %l = kiln.linear %n, %w, %bias {activation = "none"} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %pf = kiln.cast %pos {to = 1 : i64} : (tensor<?x1xi64>) -> tensor<?x1xf32>
  %ang = kiln.mul %pf, %freq : (tensor<?x1xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
  %cos = kiln.cos %ang : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %y = kiln.rotary %l, %cos, %cos {interleaved = 0 : i64, rotary_dim = 8 : i64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// The causal mask as older exports (OPT, Falcon, StableLM) build it: a
// finfo(float32).min fill, Trilu, times (key > query position). Trilu and a
// ScatterND only select elements, so the whole mask stays f32 with the
// positions it is computed from (in half, the fill rounds to -inf and 0 * -inf
// is NaN), and one Cast joins it to the half scores. Near-miss: a Trilu of
// an activation and a ScatterND that adds compute on half values: half.
// CHECK-LABEL: func.func @older_mask
// CHECK: %[[FILL:.*]] = kiln.constant_of_shape %{{.*}} {value = -3.40282347E+38 : f32} : (tensor<2xi64>) -> tensor<?x?xf32>
// CHECK: %[[TRI:.*]] = kiln.trilu %[[FILL]], %{{.*}} {upper = 1 : i64} : (tensor<?x?xf32>, tensor<i64>) -> tensor<?x?xf32>
// CHECK: %[[KEEP:.*]] = kiln.cast %{{.*}} {to = 1 : i64} : (tensor<?x?xi1>) -> tensor<?x?xf32>
// CHECK: %[[MASK:.*]] = kiln.mul %[[TRI]], %[[KEEP]] : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK: %[[SET:.*]] = kiln.scatter_nd %[[MASK]], %arg3, %[[MASK]] {reduction = "none"} : (tensor<?x?xf32>, tensor<1x1x2xi64>, tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK: %[[MASK16:.*]] = kiln.cast %[[SET]] {to = 2 : i64} : (tensor<?x?xf32>) -> tensor<?x?xf16>
// CHECK: %[[S:.*]] = kiln.add %arg0, %[[MASK16]] : (tensor<?x?xf16>, tensor<?x?xf16>) -> tensor<?x?xf16>
// CHECK: kiln.trilu %[[S]] {upper = 0 : i64} : (tensor<?x?xf16>) -> tensor<?x?xf16>
// CHECK: kiln.scatter_nd %{{.*}}, %arg3, %{{.*}} {reduction = "add"} : (tensor<?x?xf16>, tensor<1x1x2xi64>, tensor<?x?xf16>) -> tensor<?x?xf16>
func.func @older_mask(%scores: tensor<?x?xf32> {kiln.name = "scores"}, %q: tensor<?xi64> {kiln.name = "query_pos"},
                      %k: tensor<?xi64> {kiln.name = "key_pos"}, %idx: tensor<1x1x2xi64> {kiln.name = "idx"})
    -> (tensor<?x?xf32> {kiln.name = "y"}) {
  %one = kiln.constant dense<1> : tensor<i64>
  %col = kiln.constant dense<[-1, 1]> : tensor<2xi64>
  %sq = kiln.shape %q {end = 1 : i64, start = 0 : i64} : (tensor<?xi64>) -> tensor<1xi64>
  %sk = kiln.shape %k {end = 1 : i64, start = 0 : i64} : (tensor<?xi64>) -> tensor<1xi64>
  %shape = kiln.concat %sq, %sk {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %fill = kiln.constant_of_shape %shape {value = -3.40282347E+38 : f32} : (tensor<2xi64>) -> tensor<?x?xf32>
  %tri = kiln.trilu %fill, %one {upper = 1 : i64} : (tensor<?x?xf32>, tensor<i64>) -> tensor<?x?xf32>
  %qc = kiln.reshape %q, %col {allowzero = 0 : i64} : (tensor<?xi64>, tensor<2xi64>) -> tensor<?x1xi64>
  %later = kiln.greater %k, %qc : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %keep = kiln.cast %later {to = 1 : i64} : (tensor<?x?xi1>) -> tensor<?x?xf32>
  %mask = kiln.mul %tri, %keep : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %set = kiln.scatter_nd %mask, %idx, %mask {reduction = "none"} : (tensor<?x?xf32>, tensor<1x1x2xi64>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = kiln.add %scores, %set : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %low = kiln.trilu %s {upper = 0 : i64} : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %acc = kiln.scatter_nd %low, %idx, %s {reduction = "add"} : (tensor<?x?xf32>, tensor<1x1x2xi64>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %acc : tensor<?x?xf32>
}

// -----

// A finite constant past the half type's range saturates to its largest
// finite value instead of becoming inf: finfo(float32).min becomes -65504 in
// f16 and -3.3895e38 in bf16 (what finfo.min is in each), in a constant and
// in a ConstantOfShape fill that half ops read. Near-miss: -inf stays -inf,
// and 60000, in f16's range, is only rounded (exact in f16, 59904 in bf16).
// CHECK-LABEL: func.func @saturate
// CHECK-DAG: kiln.constant dense<-6.550400e+04> : tensor<f16>
// CHECK-DAG: kiln.constant dense<0xFC00> : tensor<f16>
// CHECK-DAG: kiln.constant dense<6.000000e+04> : tensor<f16>
// CHECK: kiln.constant_of_shape %{{.*}} {value = -6.550400e+04 : f32} : (tensor<2xi64>) -> tensor<?x?xf16>
// BF16-LABEL: func.func @saturate
// BF16-DAG: kiln.constant dense<-3.389530e+38> : tensor<bf16>
// BF16-DAG: kiln.constant dense<0xFF80> : tensor<bf16>
// BF16-DAG: kiln.constant dense<5.990400e+04> : tensor<bf16>
// BF16: kiln.constant_of_shape %{{.*}} {value = -3.38953139E+38 : f32} : (tensor<2xi64>) -> tensor<?x?xbf16>
func.func @saturate(%x: tensor<?x?xf32> {kiln.name = "x"}) -> (tensor<?x?xf32> {kiln.name = "y"}) {
  %min = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %inf = kiln.constant dense<0xFF800000> : tensor<f32>
  %big = kiln.constant dense<6.0e+04> : tensor<f32>
  %shape = kiln.shape %x {end = 2 : i64, start = 0 : i64} : (tensor<?x?xf32>) -> tensor<2xi64>
  %fill = kiln.constant_of_shape %shape {value = -3.40282347E+38 : f32} : (tensor<2xi64>) -> tensor<?x?xf32>
  %a = kiln.add %x, %min : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
  %b = kiln.add %a, %inf : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
  %c = kiln.add %b, %big : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
  %d = kiln.add %c, %fill : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %d : tensor<?x?xf32>
}
