// RUN: kiln-opt %s --kiln-memory-plan --split-input-file | FileCheck %s

// Near misses: tensors whose lifetimes touch must not share a slot.

// An op's operands are still live while it writes its result (kernels do
// not run in place): %c cannot take %a's or %b's slot even though both die
// at %c.

// CHECK-LABEL: func.func @operands_and_result
// CHECK-SAME: num_slots = 3 : i64
func.func @operands_and_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 0>
  %a = kiln.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.neg {{.*}}kiln.slots = array<i64: 1>
  %b = kiln.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.add {{.*}}kiln.slots = array<i64: 2>
  %c = kiln.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

// A graph output lives to the end: nothing written after it may take its
// slot, even though no op reads it again.

// CHECK-LABEL: func.func @output_lives_to_the_end
// CHECK-SAME: num_slots = 3 : i64
func.func @output_lives_to_the_end(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 0>
  %out = kiln.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.neg {{.*}}kiln.slots = array<i64: 1>
  %a = kiln.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.exp {{.*}}kiln.slots = array<i64: 2>
  %b = kiln.exp %a : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.tanh {{.*}}kiln.slots = array<i64: 1>
  %c = kiln.tanh %b : (tensor<4xf32>) -> tensor<4xf32>
  return %out, %c : tensor<4xf32>, tensor<4xf32>
}

// -----

// The results of one op are live together.

// CHECK-LABEL: func.func @split_results
// CHECK-SAME: num_slots = 2 : i64
func.func @split_results(%x: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK: kiln.split {{.*}}kiln.slots = array<i64: 0, 1>
  %p, %q = kiln.split %x {axis = 0 : i64, num_outputs = 2 : i64} : (tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %p, %q : tensor<4xf32>, tensor<4xf32>
}

// -----

// A tensor read by a later op stays live across the ops in between: %a is
// read by %d, so neither %b nor %c may reuse its slot.

// CHECK-LABEL: func.func @long_lifetime
// CHECK-SAME: num_slots = 3 : i64
func.func @long_lifetime(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: kiln.relu {{.*}}kiln.slots = array<i64: 0>
  %a = kiln.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.neg {{.*}}kiln.slots = array<i64: 1>
  %b = kiln.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.exp {{.*}}kiln.slots = array<i64: 2>
  %c = kiln.exp %b : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: kiln.add {{.*}}kiln.slots = array<i64: 1>
  %d = kiln.add %a, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}
