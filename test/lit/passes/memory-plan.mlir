// RUN: kiln-opt %s --kiln-memory-plan --split-input-file | FileCheck %s

// Disjoint lifetimes share slots: %a dies at %b, so %c reuses its slot, and
// %d reuses %b's. Two slots hold four tensors.

// CHECK-LABEL: func.func @chain
// CHECK-SAME: kiln.memory_plan = {num_slots = 2 : i64, slot_static_bytes = array<i64: 128, 128>, unshared_static_bytes = 512 : i64}
func.func @chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 0>
  %a = kiln.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: kiln.neg {{.*}}kiln.slots = array<i64: 1>
  %b = kiln.neg %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: kiln.exp {{.*}}kiln.slots = array<i64: 0>
  %c = kiln.exp %b : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: kiln.tanh {{.*}}kiln.slots = array<i64: 1>
  %d = kiln.tanh %c : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// Best fit: when %a (256 B) and %b (16 B) both die at %c, the 16-byte %d
// takes %b's small slot, leaving the large one for %e.

// CHECK-LABEL: func.func @best_fit
// CHECK-SAME: slot_static_bytes = array<i64: 256, 16, 256>
func.func @best_fit(%x: tensor<16x4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<16x4xf32>) {
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 0>
  %a = kiln.relu %x : (tensor<16x4xf32>) -> tensor<16x4xf32>
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 1>
  %b = kiln.relu %y : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.add {{.*}}kiln.slots = array<i64: 2>
  %c = kiln.add %a, %b : (tensor<16x4xf32>, tensor<4xf32>) -> tensor<16x4xf32>
  // CHECK: kiln.neg {{.*}}kiln.slots = array<i64: 1>
  %d = kiln.neg %y : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.neg {{.*}}kiln.slots = array<i64: 0>
  %e = kiln.neg %c : (tensor<16x4xf32>) -> tensor<16x4xf32>
  return %d, %e : tensor<4xf32>, tensor<16x4xf32>
}

// -----

// Best fit among three free slots: the small one sits between two large
// ones, so neither the first nor the last free slot is the right answer.

// CHECK-LABEL: func.func @best_fit_middle
// CHECK-SAME: slot_static_bytes = array<i64: 256, 16, 256, 528>
func.func @best_fit_middle(%x: tensor<16x4xf32>, %y: tensor<1x4xf32>) -> (tensor<1x4xf32>, tensor<33x4xf32>) {
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 0>
  %a = kiln.relu %x : (tensor<16x4xf32>) -> tensor<16x4xf32>
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 1>
  %b = kiln.relu %y : (tensor<1x4xf32>) -> tensor<1x4xf32>
  // CHECK: kiln.neg {{.*}}kiln.slots = array<i64: 2>
  %c = kiln.neg %x : (tensor<16x4xf32>) -> tensor<16x4xf32>
  // CHECK: kiln.concat {{.*}}kiln.slots = array<i64: 3>
  %d = kiln.concat %a, %b, %c {axis = 0 : i64} : (tensor<16x4xf32>, tensor<1x4xf32>, tensor<16x4xf32>) -> tensor<33x4xf32>
  // CHECK: kiln.exp {{.*}}kiln.slots = array<i64: 1>
  %e = kiln.exp %y : (tensor<1x4xf32>) -> tensor<1x4xf32>
  return %e, %d : tensor<1x4xf32>, tensor<33x4xf32>
}

// -----

// Constants are weights and host ops are evaluated on the host: neither gets
// a slot, and neither counts toward the arena.

// CHECK-LABEL: func.func @weights_and_host
// CHECK-SAME: kiln.memory_plan = {num_slots = 1 : i64, slot_static_bytes = array<i64: 32>, unshared_static_bytes = 32 : i64}
func.func @weights_and_host(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: kiln.constant dense<1.000000e+00> : tensor<8xf32>{{$}}
  %w = kiln.constant dense<1.0> : tensor<8xf32>
  // CHECK: kiln.shape %{{.*}} {end = 1 : i64, kiln.host, start = 0 : i64} :
  %s = kiln.shape %x {end = 1 : i64, kiln.host, start = 0 : i64} : (tensor<8xf32>) -> tensor<1xi64>
  // CHECK: kiln.add {{.*}}kiln.slots = array<i64: 0>
  %y = kiln.add %x, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// An unused result is dead right after the op that writes it, so the next
// op's result takes its slot.

// CHECK-LABEL: func.func @unused_result
// CHECK-SAME: num_slots = 2 : i64
func.func @unused_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 0>
  %dead = kiln.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.neg {{.*}}kiln.slots = array<i64: 0>
  %a = kiln.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.exp {{.*}}kiln.slots = array<i64: 1>
  %b = kiln.exp %a : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// Dynamic shapes: slot sizes are unknown until the runtime binds the input
// shapes, so the static sizes are -1, yet reuse still happens.

// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: kiln.memory_plan = {num_slots = 2 : i64, slot_static_bytes = array<i64: -1, -1>, unshared_static_bytes = -1 : i64}
func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 0>
  %a = kiln.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  // CHECK: kiln.neg {{.*}}kiln.slots = array<i64: 1>
  %b = kiln.neg %a : (tensor<?x4xf32>) -> tensor<?x4xf32>
  // CHECK: kiln.exp {{.*}}kiln.slots = array<i64: 0>
  %c = kiln.exp %b : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %c : tensor<?x4xf32>
}

// -----

// Views: a reshape or unsqueeze of an activation takes its operand's slot
// (the same bytes; the kernel copies nothing), and the slot stays taken
// until the last reader of either: %e reads both views, so it needs a third
// slot, and %f reuses one of the views' slots once %e is done. Views add
// nothing to the unshared bytes.

// CHECK-LABEL: func.func @views
// CHECK-SAME: kiln.memory_plan = {num_slots = 3 : i64, slot_static_bytes = array<i64: 128, 128, 128>, unshared_static_bytes = 512 : i64}
func.func @views(%x: tensor<4x8xf32>) -> tensor<1x32xf32> {
  %s = kiln.constant dense<[32]> : tensor<1xi64>
  %ax = kiln.constant dense<[0]> : tensor<1xi64>
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 0>
  %a = kiln.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: kiln.reshape {{.*}}kiln.slots = array<i64: 0>
  %b = kiln.reshape %a, %s {allowzero = 0 : i64} : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<32xf32>
  // CHECK: kiln.neg {{.*}}kiln.slots = array<i64: 1>
  %c = kiln.neg %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: kiln.reshape {{.*}}kiln.slots = array<i64: 1>
  %d = kiln.reshape %c, %s {allowzero = 0 : i64} : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<32xf32>
  // CHECK: kiln.unsqueeze {{.*}}kiln.slots = array<i64: 1>
  %d1 = kiln.unsqueeze %d, %ax : (tensor<32xf32>, tensor<1xi64>) -> tensor<1x32xf32>
  // CHECK: kiln.unsqueeze {{.*}}kiln.slots = array<i64: 0>
  %b1 = kiln.unsqueeze %b, %ax : (tensor<32xf32>, tensor<1xi64>) -> tensor<1x32xf32>
  // CHECK: kiln.add {{.*}}kiln.slots = array<i64: 2>
  %e = kiln.add %b1, %d1 : (tensor<1x32xf32>, tensor<1x32xf32>) -> tensor<1x32xf32>
  // CHECK: kiln.exp {{.*}}kiln.slots = array<i64: {{[01]}}>
  %f = kiln.exp %e : (tensor<1x32xf32>) -> tensor<1x32xf32>
  return %f : tensor<1x32xf32>
}

// -----

// Near-misses: a view that is returned, and a view of a returned tensor,
// get slots of their own (each graph output has memory of its own).

// CHECK-LABEL: func.func @returned_views
// CHECK-SAME: num_slots = 3 : i64
func.func @returned_views(%x: tensor<4x8xf32>) -> (tensor<32xf32>, tensor<4x8xf32>, tensor<32xf32>) {
  %s = kiln.constant dense<[32]> : tensor<1xi64>
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 0>
  %a = kiln.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: kiln.reshape {{.*}}kiln.slots = array<i64: 1>
  %b = kiln.reshape %a, %s {allowzero = 0 : i64} : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<32xf32>
  // CHECK: kiln.neg {{.*}}kiln.slots = array<i64: 0>
  %c = kiln.neg %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: kiln.reshape {{.*}}kiln.slots = array<i64: 2>
  %d = kiln.reshape %c, %s {allowzero = 0 : i64} : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<32xf32>
  return %b, %c, %d : tensor<32xf32>, tensor<4x8xf32>, tensor<32xf32>
}
