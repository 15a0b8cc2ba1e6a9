// RUN: kiln-opt %s -split-input-file -kiln-plan | FileCheck %s

// The plan phase's pipeline (what `kiln build` runs by this name before it
// writes a plan): types are refined first, the shape chain becomes host
// tensors with no slot, and only the float activations get arena slots.

// CHECK-LABEL: func.func @reshape_chain
// CHECK-SAME: -> tensor<2x24xf32>
// CHECK-SAME: kiln.memory_plan = {num_slots = 2 : i64, slot_static_bytes = array<i64: 192, 192>
func.func @reshape_chain(%x: tensor<2x3x8xf32>) -> tensor<*xf32> {
  // CHECK: kiln.shape {{.*}}kiln.host{{.*}} -> tensor<3xi64>
  %s = kiln.shape %x {end = 3 : i64, start = 0 : i64} : (tensor<2x3x8xf32>) -> tensor<*xi64>
  %i = kiln.constant dense<0> : tensor<1xi64>
  // CHECK: kiln.gather {{.*}}kiln.host
  // CHECK-NOT: kiln.slots
  %b = kiln.gather %s, %i {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %m = kiln.constant dense<-1> : tensor<1xi64>
  // CHECK: kiln.concat {{.*}}kiln.host
  // CHECK-NOT: kiln.slots
  %shape = kiln.concat %b, %m {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  // CHECK: kiln.reshape {{.*}}kiln.slots = array<i64: 0>{{.*}} -> tensor<2x24xf32>
  %y = kiln.reshape %x, %shape {allowzero = 0 : i64} : (tensor<2x3x8xf32>, tensor<*xi64>) -> tensor<*xf32>
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 1>
  %z = kiln.relu %y : (tensor<*xf32>) -> tensor<*xf32>
  return %z : tensor<*xf32>
}

// -----

// Near miss: a function that returns its input has no op to plan, so the
// pipeline materializes the output as a copy with a slot of its own.

// CHECK-LABEL: func.func @passthrough
// CHECK-SAME: num_slots = 1 : i64
// CHECK: %[[C:.*]] = kiln.identity %arg0 {kiln.slots = array<i64: 0>}
// CHECK: return %[[C]]
func.func @passthrough(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
