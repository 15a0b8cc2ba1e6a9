// RUN: kiln-opt %s -split-input-file -kiln-inject | FileCheck %s
// GELU (erf and tanh forms), linear + bias + activation, gated MLP (separate
// and fused gate/up projections), sibling projections, and near-misses.

// BERT / Optimum opset 18: x * 0.5 * (1 + erf(x / sqrt(2))) after MatMul + Add.
// CHECK-LABEL: func @gelu_erf_linear
// CHECK: %[[Y:.*]] = kiln.linear %arg0, %{{.*}}, %{{.*}} {activation = "gelu"}
// CHECK-NOT: kiln.erf
// CHECK: return %[[Y]]
func.func @gelu_erf_linear(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = kiln.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %m = kiln.matmul %x, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %h = kiln.add %m, %b : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %d = kiln.div %h, %sqrt2 : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
  %e = kiln.erf %d : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %a = kiln.add %e, %one : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
  %p = kiln.mul %h, %a : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %y = kiln.mul %p, %half : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// GPT-2's tanh form: 0.5x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
// CHECK-LABEL: func @gelu_tanh
// CHECK: kiln.gelu %arg0 {approximate = "tanh"}
// CHECK-NOT: kiln.tanh
func.func @gelu_tanh(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %three = kiln.constant dense<3.0> : tensor<f32>
  %c = kiln.constant dense<0.044715> : tensor<f32>
  %k = kiln.constant dense<0.797884583> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %hx = kiln.mul %x, %half : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %x3 = kiln.pow %x, %three : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %cx3 = kiln.mul %x3, %c : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %in = kiln.add %x, %cx3 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %s = kiln.mul %in, %k : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %t = kiln.tanh %s : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %a = kiln.add %t, %one : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %y = kiln.mul %hx, %a : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Near-miss: a cubic coefficient other than 0.044715 is not GELU.
// CHECK: GELU: tanh's argument is not sqrt(2/pi) * (x + 0.044715 x^3)
// CHECK-LABEL: func @gelu_wrong_coefficient
// CHECK-NOT: kiln.gelu
func.func @gelu_wrong_coefficient(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %three = kiln.constant dense<3.0> : tensor<f32>
  %c = kiln.constant dense<0.05> : tensor<f32>
  %k = kiln.constant dense<0.797884583> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %hx = kiln.mul %x, %half : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %x3 = kiln.pow %x, %three : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %cx3 = kiln.mul %x3, %c : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %in = kiln.add %x, %cx3 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %s = kiln.mul %in, %k : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %t = kiln.tanh %s : (tensor<?x8xf32>) -> tensor<?x8xf32> loc("/transformer/h.0/mlp/act/Tanh")
  %a = kiln.add %t, %one : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  %y = kiln.mul %hx, %a : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Llama's SwiGLU: down(silu(gate(x)) * up(x)) with separate projections;
// the gate and up weights are concatenated into one [K, 2F] weight.
// CHECK-LABEL: func @gated_silu
// CHECK: %[[W:.*]] = kiln.constant {name = "gate.gate_up"} dense_resource
// CHECK-SAME: tensor<2x4xf32>
// CHECK: kiln.gated_mlp %arg0, %[[W]], %{{.*}} {activation = "silu"} : (tensor<?x2xf32>, tensor<2x4xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
// CHECK-NOT: kiln.sigmoid
func.func @gated_silu(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %wg = kiln.constant {name = "gate"} dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wu = kiln.constant {name = "up"} dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %wd = kiln.constant {name = "down"} dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %g = kiln.matmul %x, %wg : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %s = kiln.sigmoid %g : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %a = kiln.mul %g, %s : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %u = kiln.matmul %x, %wu : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %m = kiln.mul %a, %u : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %y = kiln.matmul %m, %wd : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Phi-3: one gate_up projection split in halves, GELU on the first.
// CHECK-LABEL: func @gated_fused_gate_up
// CHECK: kiln.gated_mlp %arg0, %{{.*}}, %{{.*}} {activation = "gelu"} : (tensor<?x2xf32>, tensor<2x4xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
func.func @gated_fused_gate_up(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %wgu = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %wd = kiln.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %sizes = kiln.constant dense<[2, 2]> : tensor<2xi64>
  %gu = kiln.matmul %x, %wgu : (tensor<?x2xf32>, tensor<2x4xf32>) -> tensor<?x4xf32>
  %h:2 = kiln.split %gu, %sizes {axis = -1 : i64, num_outputs = 0 : i64} : (tensor<?x4xf32>, tensor<2xi64>) -> (tensor<?x2xf32>, tensor<?x2xf32>)
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %d = kiln.div %h#0, %sqrt2 : (tensor<?x2xf32>, tensor<f32>) -> tensor<?x2xf32>
  %e = kiln.erf %d : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %a = kiln.add %one, %e : (tensor<f32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %hx = kiln.mul %half, %h#0 : (tensor<f32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %g = kiln.mul %hx, %a : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %m = kiln.mul %h#1, %g : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %y = kiln.matmul %m, %wd : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// Near-miss: biased gate/up projections are not the gated MLP kiln fuses;
// they stay two linears, and the reason is reported at the down projection.
// CHECK: gated MLP: gate/up projections have a bias
// CHECK-LABEL: func @gated_with_bias
// CHECK-NOT: kiln.gated_mlp
func.func @gated_with_bias(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %wg = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wu = kiln.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %wd = kiln.constant dense<[[1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %b = kiln.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %g0 = kiln.matmul %x, %wg : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %g = kiln.add %g0, %b : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %s = kiln.sigmoid %g : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %a = kiln.mul %g, %s : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %u = kiln.matmul %x, %wu : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %m = kiln.mul %a, %u : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %y = kiln.matmul %m, %wd : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32> loc("/model/layers.0/mlp/down_proj/MatMul")
  return %y : tensor<?x2xf32>
}

// -----

// Q, K and V projections of one input become one linear and a Split.
// CHECK-LABEL: func @fused_qkv
// CHECK: %[[W:.*]] = kiln.constant {name = "q.fused"} dense_resource
// CHECK-SAME: tensor<2x5xf32>
// CHECK: %[[L:.*]] = kiln.linear %arg0, %[[W]] {activation = "none"} : (tensor<?x2xf32>, tensor<2x5xf32>) -> tensor<?x5xf32>
// CHECK: kiln.split %[[L]], %{{.*}} {axis = 1 : i64, num_outputs = 0 : i64} : (tensor<?x5xf32>, tensor<3xi64>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x1xf32>)
func.func @fused_qkv(%x: tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x1xf32>) {
  %wq = kiln.constant {name = "q"} dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wk = kiln.constant {name = "k"} dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %wv = kiln.constant {name = "v"} dense<[[9.0], [10.0]]> : tensor<2x1xf32>
  %q = kiln.matmul %x, %wq : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %k = kiln.matmul %x, %wk : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %v = kiln.matmul %x, %wv : (tensor<?x2xf32>, tensor<2x1xf32>) -> tensor<?x1xf32>
  return %q, %k, %v : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x1xf32>
}

// -----

// Near-miss: a MatMul of two activations is not a projection.
// CHECK-LABEL: func @matmul_of_activations
// CHECK-NOT: kiln.linear
// CHECK: kiln.matmul
func.func @matmul_of_activations(%x: tensor<?x2xf32>, %w: tensor<2x2xf32>) -> tensor<?x2xf32> {
  %y = kiln.matmul %x, %w : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}
