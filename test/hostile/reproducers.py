"""Reproducers of crashes that fuzzing found, each generated here (nothing
binary is committed) and run by run_hostile.py under the sanitizer build.

Every case names the input, the command, the exit code it must end with and
a piece of the message that proves the right check refused it (or, for a
valid model that used to trip a sanitizer, that the build works).
"""
import struct
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from plan_surgery import Plan


class Case:
    def __init__(self, what, argv, code, expect):
        self.what = what
        self.argv = argv  # without the kiln binary
        self.code = code
        self.expect = expect  # substring of stderr (code 2) or stdout (code 0)


def _model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _io(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def small_chain_model():
    """x[2, 4] -> Relu -> Neg -> Exp: a plan of three ops, static slots."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"),
             helper.make_node("Neg", ["a"], ["b"], name="neg"),
             helper.make_node("Exp", ["b"], ["y"], name="exp")]
    return _model(nodes, [_io("x", [2, 4])], [_io("y", [2, 4])])


def onnx_cases(tmp):
    """Models that crashed or exhausted `kiln build`."""
    cases = []
    tmp = Path(tmp)

    # LayerNormalization's axis sized a list before any range check: axis
    # -2^38 with Mean requested ran into "LLVM ERROR: out of memory".
    ln = _model([helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean"],
                                  axis=-(2 ** 38), name="ln")],
                [_io("x", [2, 4])], [_io("y", None), _io("mean", None)],
                [numpy_helper.from_array(np.ones(4, np.float32), "s")])
    onnx.save(ln, tmp / "ln_axis.onnx")
    cases.append(Case("LayerNormalization axis -2^38 with Mean",
                      ["build", str(tmp / "ln_axis.onnx"), "-o", str(tmp / "r.plan"), "-q"], 2,
                      "axis -274877906944 is out of range for an input of rank 2"))

    # A static f32[2^61] is 2^63 bytes: the memory planner's size products
    # overflowed int64 (UBSan) and the slot came out "dynamic".
    big = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [_io("x", [2 ** 61])], [_io("y", [2 ** 61])])
    onnx.save(big, tmp / "huge_static.onnx")
    cases.append(Case("static f32[2^61] activation",
                      ["build", str(tmp / "huge_static.onnx"), "-o", str(tmp / "r.plan"), "-q"], 2,
                      "needs more than 2^63 bytes"))
    # The same overflow from the static part of a dynamic shape.
    big_dyn = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                     [_io("x", ["n", 2 ** 31, 2 ** 31])], [_io("y", ["n", 2 ** 31, 2 ** 31])])
    onnx.save(big_dyn, tmp / "huge_dynamic.onnx")
    cases.append(Case("f32[n, 2^31, 2^31] activation",
                      ["build", str(tmp / "huge_dynamic.onnx"), "-o", str(tmp / "r.plan"), "-q"],
                      2, "needs more than 2^63 bytes"))

    # An empty weight: the plan writer passed null pointers to memcpy (UB
    # that UBSan reports). It is a valid model: it must build and run.
    empty = _model([helper.make_node("Concat", ["x", "empty"], ["y"], axis=1, name="cat")],
                   [_io("x", [1, 4])], [_io("y", [1, 4])],
                   [numpy_helper.from_array(np.zeros((1, 0), np.float32), "empty")])
    onnx.save(empty, tmp / "empty_weight.onnx")
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    (tmp / "x.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    cases.append(Case("empty weight builds",
                      ["build", str(tmp / "empty_weight.onnx"), "-o", str(tmp / "empty.plan"),
                       "-q"], 0, None))
    cases.append(Case("empty weight inspects",
                      ["inspect", "--json", "--ops", str(tmp / "empty.plan")], 0, '"empty"'))
    cases.append(Case("empty weight runs",
                      ["exec", str(tmp / "empty.plan"), "--input", f"x={tmp / 'x.pb'}",
                       "--output-dir", str(tmp / "empty_out")], 0, None))
    return cases


def check_empty_weight_output(tmp):
    """The empty-weight plan's output must equal its input (Concat with [1, 0])."""
    out = Path(tmp) / "empty_out" / "y.pb"
    if not out.exists():
        return "empty weight: kiln exec wrote no y.pb"
    t = onnx.TensorProto()
    t.ParseFromString(out.read_bytes())
    y = numpy_helper.to_array(t)
    want = np.arange(4, dtype=np.float32).reshape(1, 4)
    if y.shape != want.shape or not np.array_equal(y, want):
        return f"empty weight: output {y!r}, expected {want!r}"
    return None


def plan_cases(plan_bytes):
    """(what, bytes, message) for plans with valid checksums whose memory
    plan disagrees with the tensors. `plan_bytes` is small_chain_model's plan."""
    def edited(fn):
        p = Plan(plan_bytes)
        fn(p)
        return p.reseal()

    def activation(p):
        for t in p.tensors():
            if p.get(t, "Tensor", "kind", "<b") in (None, 0) and \
                    p.get(t, "Tensor", "slot", "<i") is not None:
                return t
        raise ValueError("the plan has no activation with a stored slot")

    probe = Plan(plan_bytes)
    mp = probe.memory_plan()
    n_bytes = probe.vector(probe.child(mp, "MemoryPlan", "slot_static_bytes"))[0]
    n_tensors = len(probe.tensors())
    if n_tensors <= n_bytes:
        raise ValueError("the probe plan needs more tensors than slots")

    def far_slot(p):
        # The fuzzer's 4 KB plan: slot and num_slots 2^30 made DecodeTensors
        # read slot_static_bytes[2^30], 8 GB away (segfault).
        p.set(p.memory_plan(), "MemoryPlan", "num_slots", "<i", 1 << 30)
        p.set(activation(p), "Tensor", "slot", "<i", (1 << 30) - 1)

    def one_past(p):
        # The shorter variant: one slot more than slot_static_bytes has
        # entries, so slot n read the 8 bytes after the vector.
        p.set(p.memory_plan(), "MemoryPlan", "num_slots", "<i", n_bytes + 1)
        p.set(activation(p), "Tensor", "slot", "<i", n_bytes)

    def negative_bytes(p):
        vec = p.child(p.memory_plan(), "MemoryPlan", "slot_static_bytes")
        struct.pack_into("<q", p.b, p.vector(vec)[1], -5)

    def overflowing_arena(p):
        vec = p.child(p.memory_plan(), "MemoryPlan", "slot_static_bytes")
        n, first = p.vector(vec)
        for i in range(n):
            struct.pack_into("<q", p.b, first + 8 * i, (1 << 63) - 1)

    def misaligned_vector(p):
        # Fuzzing found a [long] vector whose elements started 4 bytes off an
        # 8-byte boundary (the FlatBuffers verifier checks only its length's
        # alignment): UBSan's misaligned load in kiln inspect. Here the
        # memory plan's slot_static_bytes is moved 4 bytes on.
        pos = p.field_pos(p.memory_plan(), "MemoryPlan", "slot_static_bytes")
        struct.pack_into("<I", p.b, pos, p.u32(pos) + 4)

    cases = [("num_slots and a slot of 2^30", far_slot, "1073741824 slots for"),
             ("a [long] vector 4 bytes off alignment", misaligned_vector,
              "MemoryPlan.slot_static_bytes is not 8-byte aligned"),
             ("a slot one past slot_static_bytes", one_past,
              f"slot_static_bytes has {n_bytes} entries for {n_bytes + 1} slots"),
             ("negative slot bytes", negative_bytes, "has -5 static bytes")]
    if n_bytes >= 2:
        cases.append(("slot bytes summing past 2^63", overflowing_arena,
                      "add up to more than 2^63 bytes"))
    return [(what, edited(fn), msg) for what, fn, msg in cases]
