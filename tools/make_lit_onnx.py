#!/usr/bin/env python3
"""Writes the small ONNX models the importer's lit tests read.

    python3 tools/make_lit_onnx.py [--out test/lit/importer/Inputs]

Needs the `onnx` and `numpy` packages (tools/requirements-test.txt). The
outputs are committed; rerun this after changing it. Every model is a few
hundred bytes to a few KB. Besides valid models it writes broken ones on
purpose: a truncated file, random bytes, an unsupported op, an unsupported
opset, a missing external-data file and more, each named for what is wrong.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(__file__), "..", "test", "lit", "importer", "Inputs")


def model(nodes, inputs, outputs, initializers=(), opset=17, name="g", domains=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in domains]
    m = helper.make_model(graph, opset_imports=imports, producer_name="make_lit_onnx",
                          producer_version="1")
    m.ir_version = 8
    return m


def tensor(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def save(m, name, out):
    onnx.save(m, os.path.join(out, name))


def basic(out):
    """Names, dim_params, an initializer, broadcasting."""
    bias = numpy_helper.from_array(np.arange(4, dtype=np.float32), "bias")
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["sum"], name="add_bias"),
        helper.make_node("Relu", ["sum"], ["y"]),
    ]
    m = model(nodes, [tensor("x", TensorProto.FLOAT, ["batch", "seq", 4])],
              [tensor("y", TensorProto.FLOAT, ["batch", "seq", 4])], [bias])
    m.metadata_props.add(key="origin", value="lit")
    save(m, "basic.onnx", out)


def upgrades(out):
    """Opset 13 forms the importer rewrites to the newest semantics."""
    nodes = [
        # ReduceMean axes attribute (an input since opset 18).
        helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1], keepdims=1),
        # Split without `split`: equal parts, num_outputs in the newest form.
        helper.make_node("Split", ["x"], ["a", "b"], axis=2),
        # Defaults: Softmax axis -1, Transpose reverses, Gemm alpha/beta/trans.
        helper.make_node("Softmax", ["a"], ["sm"]),
        helper.make_node("Transpose", ["b"], ["t"]),
        helper.make_node("Max", ["a", "b", "a"], ["m3"]),
        helper.make_node("Shape", ["x"], ["shape"]),
    ]
    m = model(nodes, [tensor("x", TensorProto.FLOAT, [2, 3, 4])],
              [tensor("mean", TensorProto.FLOAT, None), tensor("sm", TensorProto.FLOAT, None),
               tensor("t", TensorProto.FLOAT, None), tensor("m3", TensorProto.FLOAT, None),
               tensor("shape", TensorProto.INT64, None)], opset=13)
    save(m, "upgrades.onnx", out)


def constants(out):
    """Every Constant form, and attributes' ONNX defaults."""
    nodes = [
        helper.make_node("Constant", [], ["cf"], value_float=2.5),
        helper.make_node("Constant", [], ["cfs"], value_floats=[1.0, 2.0]),
        helper.make_node("Constant", [], ["ci"], value_int=7),
        helper.make_node("Constant", [], ["cis"], value_ints=[1, -1]),
        helper.make_node("Constant", [], ["ct"],
                         value=numpy_helper.from_array(np.array([[1, 2]], dtype=np.int32))),
        helper.make_node("Abs", ["cis"], ["cis_abs"]),
        helper.make_node("ConstantOfShape", ["cis_abs"], ["zeros"],
                         value=numpy_helper.from_array(np.array([3], dtype=np.int64))),
        helper.make_node("Gemm", ["a", "b"], ["g"]),
    ]
    m = model(nodes, [tensor("a", TensorProto.FLOAT, [2, 3]), tensor("b", TensorProto.FLOAT, [3, 5])],
              [tensor(n, t, None) for n, t in [("cf", TensorProto.FLOAT), ("cfs", TensorProto.FLOAT),
                                               ("ci", TensorProto.INT64), ("ct", TensorProto.INT32),
                                               ("zeros", TensorProto.INT64), ("g", TensorProto.FLOAT)]])
    save(m, "constants.onnx", out)


def shape_chain(out):
    """The Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain exporters
    emit for multi-head attention, plus a Range over the sequence."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
    inits = [i64("zero", 0), i64("one", 1), i64("ax0", [0]), i64("heads", [2]), i64("minus1", [-1])]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
        helper.make_node("Concat", ["b1", "n1", "heads", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
        helper.make_node("Range", ["zero", "n", "one"], ["pos"]),
    ]
    m = model(nodes, [tensor("x", TensorProto.FLOAT, ["batch", "seq", 8])],
              [tensor("y", TensorProto.FLOAT, None), tensor("pos", TensorProto.INT64, None)], inits)
    save(m, "shape_chain.onnx", out)


def index_ops(out):
    """Size, GatherND (with batch_dims) and ScatterND (with a reduction), and
    ScatterND reductions older opsets lack."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
    inits = [i64("rows", [[1], [0]]), i64("at", [[0, 1, 2]]), i64("ax", [0])]
    nodes = [
        helper.make_node("Size", ["x"], ["n"]),
        helper.make_node("GatherND", ["x", "rows"], ["picked"], batch_dims=1),
        helper.make_node("GatherND", ["mask", "pos"], ["flags"]),
        helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
        helper.make_node("Cast", ["n1"], ["n1f"], to=TensorProto.FLOAT),
        helper.make_node("ScatterND", ["x", "at", "n1f"], ["y"], reduction="add"),
    ]
    m = model(nodes, [tensor("x", TensorProto.FLOAT, [2, 3, 4]),
                      tensor("mask", TensorProto.BOOL, ["batch", "seq"]),
                      tensor("pos", TensorProto.INT64, ["batch", "seq", 2])],
              [tensor("n", TensorProto.INT64, None), tensor("picked", TensorProto.FLOAT, None),
               tensor("flags", TensorProto.BOOL, None), tensor("y", TensorProto.FLOAT, None)],
              inits, opset=18)
    save(m, "index_ops.onnx", out)
    scatter = lambda opset, **attrs: model(
        [helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="scatter", **attrs)],
        [tensor("x", TensorProto.FLOAT, [4]), tensor("i", TensorProto.INT64, [1, 1]),
         tensor("u", TensorProto.FLOAT, [1])], [tensor("y", TensorProto.FLOAT, None)], opset=opset)
    save(scatter(16, reduction="max"), "scatternd_max_opset16.onnx", out)
    save(scatter(13, reduction="add"), "scatternd_add_opset13.onnx", out)


def cumsum(out):
    """CumSum as older exports number positions (`cumsum(mask, 1) - 1`), and
    with exclusive, reverse and a scalar axis."""
    inits = [numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
             numpy_helper.from_array(np.array(0, dtype=np.int32), "axis0")]
    nodes = [
        helper.make_node("CumSum", ["mask", "axis1"], ["running"], name="positions"),
        helper.make_node("CumSum", ["x", "axis0"], ["back"], exclusive=1, reverse=1),
    ]
    m = model(nodes, [tensor("mask", TensorProto.INT64, ["batch", "seq"]),
                      tensor("x", TensorProto.FLOAT, [3, 5])],
              [tensor("running", TensorProto.INT64, None), tensor("back", TensorProto.FLOAT, None)],
              inits, opset=14)
    save(m, "cumsum.onnx", out)


def routing(out):
    """A mixture-of-experts export's routing ops: TopK (two outputs, ONNX
    defaults), OneHot, NonZero and ScatterElements."""
    inits = [numpy_helper.from_array(np.array([2], dtype=np.int64), "k"),
             numpy_helper.from_array(np.array(8, dtype=np.int64), "depth"),
             numpy_helper.from_array(np.array([0, 1], dtype=np.int64), "onoff")]
    nodes = [
        helper.make_node("TopK", ["probs", "k"], ["top", "idx"], name="topk"),
        helper.make_node("OneHot", ["idx", "depth", "onoff"], ["mask"], axis=-1),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("ScatterElements", ["probs", "rows", "probs"], ["back"], axis=0),
    ]
    m = model(nodes, [tensor("probs", TensorProto.FLOAT, ["tokens", 8]),
                      tensor("rows", TensorProto.INT64, ["tokens", 8])],
              [tensor("top", TensorProto.FLOAT, None), tensor("nz", TensorProto.INT64, None),
               tensor("back", TensorProto.FLOAT, None)], inits, opset=18)
    save(m, "routing.onnx", out)


def external(out):
    """A 2048-element weight in an external file (aliased, not copied)."""
    w = numpy_helper.from_array(np.full((32, 64), 0.5, dtype=np.float32), "w")
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"])],
              [tensor("x", TensorProto.FLOAT, ["n", 32])], [tensor("y", TensorProto.FLOAT, None)], [w])
    onnx.save(m, os.path.join(out, "external.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="external.bin", size_threshold=0)
    # The same model pointing at a file that does not exist.
    m = onnx.load(os.path.join(out, "external.onnx"), load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = "missing.bin"
    save(m, "missing_external.onnx", out)
    # ... and at a location outside the model's directory.
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = "../escape.bin"
    save(m, "escaping_external.onnx", out)


def broken(out):
    """Files the importer must reject with a clear error."""
    ok = model([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", TensorProto.FLOAT, [4])],
               [tensor("y", TensorProto.FLOAT, [4])])
    data = ok.SerializeToString()
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(out, "garbage.onnx"), "wb") as f:
        f.write(bytes((i * 151 + 7) % 256 for i in range(512)))
    save(model([helper.make_node("Conv", ["x", "x"], ["y"], name="my_conv")],
               [tensor("x", TensorProto.FLOAT, [1, 1, 4])], [tensor("y", TensorProto.FLOAT, None)]),
         "unsupported_op.onnx", out)
    save(model([helper.make_node("FusedMatMul", ["x", "x"], ["y"], domain="com.microsoft")],
               [tensor("x", TensorProto.FLOAT, [4, 4])], [tensor("y", TensorProto.FLOAT, None)],
               domains=[("com.microsoft", 1)]),
         "custom_domain.onnx", out)
    save(model([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", TensorProto.FLOAT, [4])],
               [tensor("y", TensorProto.FLOAT, [4])], opset=22), "opset22.onnx", out)
    # Opset 11: Unsqueeze still took an `axes` attribute then.
    save(model([helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0])],
               [tensor("x", TensorProto.FLOAT, [4])], [tensor("y", TensorProto.FLOAT, None)], opset=11),
         "opset11.onnx", out)
    # Opset 7 with only And, which has not changed since: accepted.
    save(model([helper.make_node("And", ["x", "x"], ["y"])], [tensor("x", TensorProto.BOOL, [4])],
               [tensor("y", TensorProto.BOOL, [4])], opset=7), "opset7_and.onnx", out)
    save(model([helper.make_node("Relu", ["x"], ["y"])], [tensor("x", TensorProto.INT16, [4])],
               [tensor("y", TensorProto.INT16, [4])]), "int16_input.onnx", out)
    save(model([helper.make_node("Relu", ["nowhere"], ["y"], name="r")],
               [tensor("x", TensorProto.FLOAT, [4])], [tensor("y", TensorProto.FLOAT, [4])]),
         "undefined_input.onnx", out)
    bad = helper.make_tensor("w", TensorProto.FLOAT, [4], vals=b"\0" * 16, raw=True)
    bad.raw_data = b"\0" * 12
    save(model([helper.make_node("Add", ["x", "w"], ["y"])], [tensor("x", TensorProto.FLOAT, [4])],
               [tensor("y", TensorProto.FLOAT, [4])], [bad]), "short_raw_data.onnx", out)
    save(model([helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean"], name="ln")],
               [tensor("x", TensorProto.FLOAT, [2, 4]), tensor("s", TensorProto.FLOAT, [4])],
               [tensor("y", TensorProto.FLOAT, None), tensor("mean", TensorProto.FLOAT, None)]),
         "layernorm_mean.onnx", out)
    # Axes just outside [-rank, rank) with Mean requested: refused by name.
    for axis, name in ((-3, "layernorm_axis_minus3.onnx"), (2, "layernorm_axis_2.onnx")):
        save(model([helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean"], name="ln",
                                     axis=axis)],
                   [tensor("x", TensorProto.FLOAT, [2, 4]), tensor("s", TensorProto.FLOAT, [4])],
                   [tensor("y", TensorProto.FLOAT, None), tensor("mean", TensorProto.FLOAT, None)]),
             name, out)
    save(model([helper.make_node("Add", ["x", "y"], ["z"], name="bad_add")],
               [tensor("x", TensorProto.FLOAT, [2, 3]), tensor("y", TensorProto.FLOAT, [4])],
               [tensor("z", TensorProto.FLOAT, None)]), "bad_broadcast.onnx", out)
    save(model([helper.make_node("Softmax", ["x"], ["y"], axis=1.5)],
               [tensor("x", TensorProto.FLOAT, [2, 3])], [tensor("y", TensorProto.FLOAT, None)]),
         "bad_attr_type.onnx", out)


INJECT_OUT = os.path.join(os.path.dirname(__file__), "..", "test", "lit", "inject", "Inputs")


def custom_silu_mlps(out):
    """One gated MLP layer whose SiLU is spelled unusually, for the worked
    examples of user patterns (x / (1 + exp(-x))) and pass plugins
    (x * (0.5 + 0.5 * tanh(x / 2))). kiln-inject alone does not fuse them."""
    rng = np.random.default_rng(5)
    k, f = 8, 16
    inits = [numpy_helper.from_array(rng.standard_normal((k, f)).astype(np.float32), "w_gate"),
             numpy_helper.from_array(rng.standard_normal((k, f)).astype(np.float32), "w_up"),
             numpy_helper.from_array(rng.standard_normal((f, k)).astype(np.float32), "w_down"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two")]
    p = "/model/layers.0/mlp/"
    head = [helper.make_node("MatMul", ["x", "w_gate"], ["g"], name=p + "gate_proj/MatMul"),
            helper.make_node("MatMul", ["x", "w_up"], ["u"], name=p + "up_proj/MatMul")]
    tail = [helper.make_node("Mul", ["act", "u"], ["m"], name=p + "Mul"),
            helper.make_node("MatMul", ["m", "w_down"], ["y"], name=p + "down_proj/MatMul")]
    division = [helper.make_node("Neg", ["g"], ["ng"], name=p + "act/Neg"),
                helper.make_node("Exp", ["ng"], ["e"], name=p + "act/Exp"),
                helper.make_node("Add", ["e", "one"], ["d"], name=p + "act/Add"),
                helper.make_node("Div", ["g", "d"], ["act"], name=p + "act/Div")]
    tanh = [helper.make_node("Div", ["g", "two"], ["g2"], name=p + "act/Div"),
            helper.make_node("Tanh", ["g2"], ["t"], name=p + "act/Tanh"),
            helper.make_node("Mul", ["half", "t"], ["ht"], name=p + "act/Mul"),
            helper.make_node("Add", ["half", "ht"], ["sg"], name=p + "act/Add"),
            helper.make_node("Mul", ["g", "sg"], ["act"], name=p + "act/Mul_1")]
    io = ([tensor("x", TensorProto.FLOAT, ["batch", "seq", k])],
          [tensor("y", TensorProto.FLOAT, ["batch", "seq", k])])
    save(model(head + division + tail, *io, initializers=inits), "silu_division_mlp.onnx", out)
    save(model(head + tanh + tail, *io, initializers=inits), "silu_tanh_mlp.onnx", out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--inject-out", default=INJECT_OUT)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for make in (basic, upgrades, constants, shape_chain, index_ops, cumsum, routing, external,
                 broken):
        make(args.out)
    os.makedirs(args.inject_out, exist_ok=True)
    custom_silu_mlps(args.inject_out)


if __name__ == "__main__":
    main()
