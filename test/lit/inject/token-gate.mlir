// RUN: kiln-opt %s -split-input-file -kiln-inject | FileCheck %s
// The injection report and a per-token gate: sigmoid of a one-column
// projection that scales a value (Qwen2-MoE's shared_expert_gate) is left as
// it is and not reported as an unfused MLP activation; a sigmoid of a wider
// projection (near miss) still is.

// CHECK-LABEL: module attributes {kiln.injection_missing
// CHECK-NOT: shared_expert_gate/Sigmoid
// CHECK: func.func @token_gate
// CHECK: kiln.sigmoid
func.func @token_gate(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %wg = kiln.constant dense<0.5> : tensor<8x1xf32>
  %g = kiln.linear %x, %wg {activation = "none"} : (tensor<?x8xf32>, tensor<8x1xf32>) -> tensor<?x1xf32> loc("/model/layers.0/mlp/shared_expert_gate/MatMul")
  %s = kiln.sigmoid %g : (tensor<?x1xf32>) -> tensor<?x1xf32> loc("/model/layers.0/mlp/shared_expert_gate/Sigmoid")
  %m = kiln.mul %s, %y : (tensor<?x1xf32>, tensor<?x8xf32>) -> tensor<?x8xf32> loc("/model/layers.0/mlp/Mul")
  return %m : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: module attributes {kiln.injection_missing = [{{.*}}"layer 0: MLP not fused (/model/layers.0/mlp/wide/Sigmoid
func.func @wide_gate(%x: tensor<?x8xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %wg = kiln.constant dense<0.5> : tensor<8x4xf32>
  %g = kiln.linear %x, %wg {activation = "none"} : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32> loc("/model/layers.0/mlp/wide/MatMul")
  %s = kiln.sigmoid %g : (tensor<?x4xf32>) -> tensor<?x4xf32> loc("/model/layers.0/mlp/wide/Sigmoid")
  %m = kiln.mul %s, %y : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32> loc("/model/layers.0/mlp/Mul")
  return %m : tensor<?x4xf32>
}
