"""The fuzz harness's built seed graphs (tools/fuzz.py): about 190 small GraphDefs, one or a
few nodes each over the op types of docs/ops.md, its fusions, functions and control flow,
made with tools/fuzz_core.py's GraphBuilder (tensorboard's compiled protos, no TensorFlow)."""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

from tf2ir.tools.fuzz_core import Dt, Fn, GraphBuilder, Shp


F, I32, I64, BOOL = "float32", "int32", "int64", "bool"
UNARY_FLOAT = (
    "Abs Acos Acosh Asin Asinh Atan Atanh Ceil Cos Cosh Elu Erf Erfc Exp Expm1 Floor Inv "
    "IsFinite IsInf IsNan L2Loss Log Log1p LogSoftmax Neg Reciprocal Relu Relu6 Rint Round "
    "Rsqrt Selu Sigmoid Sign Sin Sinh Softmax Softplus Softsign Sqrt Square Tan Tanh OnesLike "
    "ZerosLike Identity Snapshot StopGradient PreventGradient").split()
BINARY_FLOAT = (
    "Add AddV2 Sub Mul Div RealDiv DivNoNan MulNoNan Maximum Minimum Pow SquaredDifference "
    "FloorDiv FloorMod Mod TruncateDiv TruncateMod Atan2 Xdivy Xlogy Equal NotEqual Greater "
    "GreaterEqual Less LessEqual").split()
BINARY_INT = "BitwiseAnd BitwiseOr BitwiseXor LeftShift RightShift".split()
REDUCTIONS = "Sum Mean Max Min Prod EuclideanNorm".split()


def _rand(*shape, dtype="float32", seed=0):
    rng = np.random.RandomState(seed)
    if dtype == "bool":
        return rng.rand(*shape) < 0.5
    if dtype.startswith("int") or dtype.startswith("uint"):
        return rng.randint(0, 4, size=shape).astype(dtype)
    return rng.randn(*shape).astype(dtype)


def seed_graphs() -> List[Tuple[str, bytes]]:
    """The built seed corpus: (name, serialized GraphDef), a few nodes each, over the op
    types tf2ir maps (docs/ops.md) and its fusions, functions and control flow."""
    seeds: List[GraphBuilder] = []

    def new(name: str) -> GraphBuilder:
        builder = GraphBuilder(name)
        seeds.append(builder)
        return builder

    for op in UNARY_FLOAT:
        b = new(op)
        b.op(op, b.ph(F, (2, 3)))
    for i, op in enumerate(BINARY_FLOAT):
        b = new(op)
        other = b.const(_rand(3, seed=i)) if i % 3 == 2 else b.ph(F, (2, 3))
        b.op(op, b.ph(F, (None, 3)), other)
    b = new("ApproximateEqual")
    b.op("ApproximateEqual", b.ph(F), b.ph(F), tolerance=1e-3)
    for op in BINARY_INT:
        b = new(op)
        b.op(op, b.ph(I32, (2, 3)), b.const(np.array([1, 2, 3], np.int32)), T=I32)
    b = new("Invert")
    b.op("Invert", b.ph(I32, (4,)), T=I32)
    for op in ("LogicalAnd", "LogicalOr"):
        b = new(op)
        b.op(op, b.ph(BOOL, (2, 3)), b.ph(BOOL, (2, 3)), T=None)
    b = new("LogicalNot")
    b.op("LogicalNot", b.ph(BOOL, (3,)), T=None)
    for op in REDUCTIONS:
        b = new(op)
        b.op(op, b.ph(F, (2, 3, 4)), b.const(np.array([1], np.int32)), keep_dims=op == "Mean",
             Tidx=Dt(I32))
    for op in ("All", "Any"):
        b = new(op)
        b.op(op, b.ph(BOOL, (2, 3)), b.const(np.array(1, np.int32)), T=None, keep_dims=False,
             Tidx=Dt(I32))
    for op in ("ArgMax", "ArgMin"):
        b = new(op)
        b.op(op, b.ph(F, (2, 3)), b.const(np.array(1, np.int32)), output_type=Dt(I64), Tidx=Dt(I32))
    for op in ("Cumsum", "Cumprod"):
        b = new(op)
        b.op(op, b.ph(F, (2, 3)), b.const(np.array(1, np.int32)), exclusive=op == "Cumsum",
             reverse=False, Tidx=Dt(I32))
    b = new("Cast")
    b.op("Cast", b.ph(F, (2, 3)), T=None, SrcT=Dt(F), DstT=Dt(I32), Truncate=False)
    for op in ("BiasAdd", "BiasAddV1"):
        b = new(op)
        b.op(op, b.ph(F, (2, 3, 4)), b.const(_rand(4)), data_format="NHWC" if op == "BiasAdd" else None)
    b = new("MatMul")
    b.op("MatMul", b.ph(F, (None, 3)), b.const(_rand(3, 4)), transpose_a=False, transpose_b=False)
    b = new("MatMulT")
    b.op("MatMul", b.ph(F, (4, 3)), b.ph(F, (5, 4)), transpose_a=True, transpose_b=True)
    for op in ("BatchMatMul", "BatchMatMulV2"):
        b = new(op)
        b.op(op, b.ph(F, (2, 2, 3)), b.const(_rand(2, 3, 4)), adj_x=False, adj_y=False)
    b = new("BatchMatMulV3")
    b.op("BatchMatMulV3", b.ph(F, (2, 2, 3)), b.ph(F, (2, 3, 4)), T=None, Ta=Dt(F), Tb=Dt(F),
         Tout=Dt(F), adj_x=False, adj_y=False)
    conv = dict(strides=[1, 1, 1, 1], padding="SAME", data_format="NHWC", dilations=[1, 1, 1, 1])
    b = new("Conv2D")
    b.op("Conv2D", b.ph(F, (None, 5, 5, 2)), b.const(_rand(3, 3, 2, 4)), **conv)
    b = new("Conv2DStrided")
    b.op("Conv2D", b.ph(F, (1, 6, 6, 2)), b.const(_rand(2, 2, 2, 3)), **{
        **conv, "strides": [1, 2, 2, 1], "padding": "VALID"})
    b = new("Conv2DExplicit")
    b.op("Conv2D", b.ph(F, (1, 5, 5, 2)), b.const(_rand(3, 3, 2, 2)), **{
        **conv, "padding": "EXPLICIT", "explicit_paddings": [0, 0, 1, 1, 1, 1, 0, 0]})
    b = new("DepthwiseConv2dNative")
    b.op("DepthwiseConv2dNative", b.ph(F, (1, 5, 5, 2)), b.const(_rand(3, 3, 2, 1)), **conv)
    b = new("Conv3D")
    b.op("Conv3D", b.ph(F, (1, 4, 4, 4, 2)), b.const(_rand(2, 2, 2, 2, 3)),
         strides=[1] * 5, padding="VALID", data_format="NDHWC", dilations=[1] * 5)
    b = new("Conv2DBackpropInput")
    b.op("Conv2DBackpropInput", b.const(np.array([1, 6, 6, 2], np.int32)), b.const(_rand(3, 3, 2, 4)),
         b.ph(F, (1, 3, 3, 4)), **{**conv, "strides": [1, 2, 2, 1]})
    b = new("Conv3DBackpropInputV2")
    b.op("Conv3DBackpropInputV2", b.const(np.array([1, 4, 4, 4, 2], np.int32)),
         b.const(_rand(2, 2, 2, 2, 3)), b.ph(F, (1, 3, 3, 3, 3)), strides=[1] * 5,
         padding="VALID", data_format="NDHWC", dilations=[1] * 5, Tshape=Dt(I32))
    pool = dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID", data_format="NHWC")
    for op in ("MaxPool", "AvgPool"):
        b = new(op)
        b.op(op, b.ph(F, (None, 4, 4, 3)), **pool)
    b = new("MaxPoolSame")
    b.op("MaxPool", b.ph(F, (1, 5, 5, 1)), **{**pool, "ksize": [1, 3, 3, 1], "padding": "SAME"})
    b = new("MaxPoolV2")
    b.op("MaxPoolV2", b.ph(F, (1, 4, 4, 3)), b.const(np.array([1, 2, 2, 1], np.int32)),
         b.const(np.array([1, 2, 2, 1], np.int32)), padding="VALID", data_format="NHWC")
    for op in ("MaxPool3D", "AvgPool3D"):
        b = new(op)
        b.op(op, b.ph(F, (1, 4, 4, 4, 2)), ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1],
             padding="VALID", data_format="NDHWC")
    for op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
        b = new(op)
        params = [b.const(_rand(2, seed=k) ** 2 + 0.5) for k in range(4)]
        b.op(op, b.ph(F, (1, 3, 3, 2)), *params, epsilon=1e-3, is_training=False,
             data_format="NHWC", **({"U": Dt(F)} if op != "FusedBatchNorm" else {}))
    b = new("LRN")
    b.op("LRN", b.ph(F, (1, 3, 3, 4)), depth_radius=2, bias=1.0, alpha=1e-4, beta=0.75)

    b = new("Reshape")
    b.op("Reshape", b.ph(F, (2, 3)), b.const(np.array([3, -1], np.int32)), Tshape=Dt(I32))
    b = new("ExpandDims")
    b.op("ExpandDims", b.ph(F, (2, 3)), b.const(np.array(1, np.int32)), Tdim=Dt(I32))
    b = new("Squeeze")
    b.op("Squeeze", b.ph(F, (2, 1, 3)), squeeze_dims=[1])
    b = new("Transpose")
    b.op("Transpose", b.ph(F, (2, 3, 4)), b.const(np.array([2, 0, 1], np.int32)), Tperm=Dt(I32))
    b = new("ConcatV2")
    b.op("ConcatV2", b.ph(F, (2, 3)), b.ph(F, (2, 3)), b.const(np.array(1, np.int32)), N=2,
         Tidx=Dt(I32))
    b = new("Concat")
    b.op("Concat", b.const(np.array(0, np.int32)), b.ph(F, (2, 3)), b.ph(F, (1, 3)), N=2)
    b = new("Pack")
    b.op("Pack", b.ph(F, (2, 3)), b.ph(F, (2, 3)), N=2, axis=0)
    b = new("Unpack")
    b.op("Unpack", b.ph(F, (2, 3)), num=3, axis=1)
    b = new("Split")
    b.op("Split", b.const(np.array(1, np.int32)), b.ph(F, (2, 4)), num_split=2)
    b = new("SplitV")
    b.op("SplitV", b.ph(F, (2, 5)), b.const(np.array([2, 3], np.int64)), b.const(np.array(1, np.int32)),
         num_split=2, Tlen=Dt(I64))
    b = new("Tile")
    b.op("Tile", b.ph(F, (2, 3)), b.const(np.array([2, 1], np.int32)), Tmultiples=Dt(I32))
    b = new("Fill")
    b.op("Add", b.op("Fill", b.const(np.array([2, 3], np.int32)), b.const(np.float32(1.5)),
                     index_type=Dt(I32)), b.ph(F, (2, 3)))
    b = new("Range")
    b.op("Range", b.const(np.int32(0)), b.ph(I32, ()), b.const(np.int32(2)), T=None, Tidx=Dt(I32))
    b = new("RangeFolded")
    r = b.op("Range", b.const(np.float32(0)), b.const(np.float32(3)), b.const(np.float32(0.5)),
             T=None, Tidx=Dt(F))
    b.op("Mul", r, b.ph(F, (6,)))
    b = new("LinSpace")
    b.op("Mul", b.op("LinSpace", b.const(np.float32(0)), b.const(np.float32(1)),
                     b.const(np.int32(3)), Tidx=Dt(I32)), b.ph(F, (3,)))
    b = new("BroadcastTo")
    b.op("BroadcastTo", b.ph(F, (3,)), b.const(np.array([2, 3], np.int32)), Tidx=Dt(I32))
    paddings = np.array([[1, 1], [0, 2]], np.int32)
    b = new("Pad")
    b.op("Pad", b.ph(F, (2, 3)), b.const(paddings), Tpaddings=Dt(I32))
    b = new("PadV2")
    b.op("PadV2", b.ph(F, (2, 3)), b.const(paddings), b.const(np.float32(1)), Tpaddings=Dt(I32))
    b = new("MirrorPad")
    b.op("MirrorPad", b.ph(F, (3, 4)), b.const(np.array([[1, 1], [1, 0]], np.int32)),
         mode="REFLECT", Tpaddings=Dt(I32))
    b = new("Slice")
    b.op("Slice", b.ph(F, (3, 4)), b.const(np.array([1, 0], np.int32)),
         b.const(np.array([2, -1], np.int32)), Index=Dt(I32))
    b = new("StridedSlice")
    b.op("StridedSlice", b.ph(F, (4, 5, 6)), b.const(np.array([1, 0, 0], np.int32)),
         b.const(np.array([3, 5, 6], np.int32)), b.const(np.array([1, 2, 1], np.int32)),
         Index=Dt(I32), begin_mask=0, end_mask=2, ellipsis_mask=0, new_axis_mask=0,
         shrink_axis_mask=0)
    b = new("StridedSliceMasks")
    b.op("StridedSlice", b.ph(F, (4, 5, 6)), b.const(np.array([0, 1], np.int32)),
         b.const(np.array([0, 2], np.int32)), b.const(np.array([1, 1], np.int32)),
         Index=Dt(I32), begin_mask=0, end_mask=0, ellipsis_mask=1, new_axis_mask=0,
         shrink_axis_mask=2)
    b = new("ReverseV2")
    b.op("ReverseV2", b.ph(F, (2, 3)), b.const(np.array([1], np.int32)), Tidx=Dt(I32))
    b = new("ReverseSequence")
    b.op("ReverseSequence", b.ph(F, (2, 4, 3)), b.const(np.array([2, 3], np.int64)),
         seq_dim=1, batch_dim=0, Tlen=Dt(I64))
    b = new("GatherV2")
    b.op("GatherV2", b.ph(F, (4, 3)), b.const(np.array([0, 2, 3], np.int32)),
         b.const(np.array(0, np.int32)), Tparams=Dt(F), Tindices=Dt(I32), Taxis=Dt(I32),
         batch_dims=0, T=None)
    b = new("GatherNd")
    b.op("GatherNd", b.ph(F, (3, 4)), b.const(np.array([[0, 1], [2, 3]], np.int32)),
         Tparams=Dt(F), Tindices=Dt(I32), T=None)
    b = new("OneHot")
    b.op("OneHot", b.ph(I32, (3,)), b.const(np.int32(4)), b.const(np.float32(1)),
         b.const(np.float32(0)), axis=-1, TI=Dt(I32))
    b = new("ScatterNd")
    b.op("ScatterNd", b.const(np.array([[0], [2]], np.int32)), b.ph(F, (2, 3)),
         b.const(np.array([4, 3], np.int32)), Tindices=Dt(I32))
    for op in ("TensorScatterAdd", "TensorScatterUpdate"):
        b = new(op)
        b.op(op, b.ph(F, (4, 3)), b.const(np.array([[0], [2]], np.int32)), b.ph(F, (2, 3)),
             Tindices=Dt(I32))
    for op in ("Select", "SelectV2"):
        b = new(op)
        b.op(op, b.ph(BOOL, (2, 3)), b.ph(F, (2, 3)), b.ph(F, (2, 3)))
    b = new("Where")
    b.op("Where", b.ph(BOOL, (2, 3)), T=BOOL)
    b = new("ClipByValue")
    b.op("ClipByValue", b.ph(F, (2, 3)), b.const(np.float32(-1)), b.const(np.float32(1)))
    b = new("TopKV2")
    b.op("TopKV2", b.ph(F, (2, 5)), b.const(np.int32(2)), sorted=True, Tk=Dt(I32))
    b = new("Unique")
    b.op("Unique", b.ph(F, (6,)), out_idx=Dt(I32))
    b = new("InvertPermutation")
    b.op("InvertPermutation", b.ph(I32, (4,)), T=I32)
    for op in ("Shape", "Size"):
        b = new(op)
        b.op(op, b.ph(F, (None, 3)), out_type=Dt(I32))
    b = new("Rank")
    b.op("Rank", b.ph(F, (2, 3)))
    b = new("ShapeN")
    b.op("ShapeN", b.ph(F, (2, 3)), b.ph(F, (4,)), N=2, out_type=Dt(I64))
    b = new("IdentityN")
    b.node("IdentityN", [b.ph(F, (2, 3)), b.ph(I32, (2,))], T=[Dt(F), Dt(I32)])
    b = new("MatrixBandPart")
    b.op("MatrixBandPart", b.ph(F, (3, 3)), b.const(np.int64(1)), b.const(np.int64(0)),
         Tindex=Dt(I64))
    b = new("MatrixDiag")
    b.op("MatrixDiag", b.ph(F, (2, 3)))
    b = new("MatrixDiagV3")
    b.op("MatrixDiagV3", b.ph(F, (2, 3)), b.const(np.int32(0)), b.const(np.int32(-1)),
         b.const(np.int32(-1)), b.const(np.float32(0)), align="RIGHT_LEFT")
    for op in ("DepthToSpace", "SpaceToDepth"):
        b = new(op)
        b.op(op, b.ph(F, (1, 2, 2, 4) if op == "DepthToSpace" else (1, 4, 4, 1)), block_size=2,
             data_format="NHWC")
    b = new("SpaceToBatchND")
    b.op("SpaceToBatchND", b.ph(F, (1, 4, 4, 1)), b.const(np.array([2, 2], np.int32)),
         b.const(np.array([[0, 0], [0, 0]], np.int32)), Tblock_shape=Dt(I32), Tpaddings=Dt(I32))
    b = new("BatchToSpaceND")
    b.op("BatchToSpaceND", b.ph(F, (4, 2, 2, 1)), b.const(np.array([2, 2], np.int32)),
         b.const(np.array([[0, 0], [0, 0]], np.int32)), Tblock_shape=Dt(I32), Tcrops=Dt(I32))
    for op in ("ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic"):
        b = new(op)
        b.op(op, b.ph(F, (1, 3, 3, 2)), b.const(np.array([6, 5], np.int32)), align_corners=False,
             half_pixel_centers=op != "ResizeBicubic")
    for version in (3, 4, 5):
        b = new(f"NonMaxSuppressionV{version}")
        extra = {4: dict(pad_to_max_output_size=False), 5: dict(pad_to_max_output_size=False)}
        inputs = [b.ph(F, (5, 4)), b.ph(F, (5,)), b.const(np.int32(3)), b.const(np.float32(0.5)),
                  b.const(np.float32(0.0))] + ([b.const(np.float32(0.0))] if version == 5 else [])
        b.op(f"NonMaxSuppressionV{version}", *inputs, **extra.get(version, {}))
    b = new("Einsum")
    b.op("Einsum", b.ph(F, (2, 3)), b.ph(F, (3, 4)), equation="ij,jk->ik", N=2)
    b = new("AddN")
    b.op("AddN", b.ph(F, (2, 3)), b.ph(F, (2, 3)), b.const(_rand(2, 3)), N=3)
    b = new("PlaceholderWithDefault")
    b.op("Relu", b.node("PlaceholderWithDefault", [b.const(_rand(2, 3))], dtype=Dt(F),
                        shape=Shp((2, 3))))
    b = new("BoostedTreesBucketize")
    b.node("BoostedTreesBucketize", [b.ph(F, (4,)), b.const(np.array([0.0, 1.0], np.float32))],
           num_features=1)
    b = new("CheckNumerics")
    b.op("Relu", b.op("CheckNumerics", b.ph(F, (2, 3)), message="bad"))
    b = new("EnsureShape")
    b.op("Relu", b.op("EnsureShape", b.ph(F, (None, 3)), shape=Shp((2, 3))))

    # -- several nodes: a dense layer, folding, fusions ---------------------------------------
    b = new("Dense")
    h = b.op("BiasAdd", b.op("MatMul", b.ph(F, (None, 4)), b.const(_rand(4, 3))), b.const(_rand(3)))
    b.op("Softmax", b.op("Relu", h))
    b = new("FoldChain")
    t = b.op("Tile", b.op("Fill", b.const(np.array([2, 2], np.int32)), b.const(np.float32(0.5))),
             b.const(np.array([1, 3], np.int32)))
    b.op("AddV2", b.op("Reshape", t, b.const(np.array([2, 6], np.int32))), b.ph(F, (2, 6)))
    b = new("ShapeArith")
    x = b.ph(F, (None, 4))
    n = b.op("StridedSlice", b.op("Shape", x, out_type=Dt(I32)), b.const(np.array([0], np.int32)),
             b.const(np.array([1], np.int32)), b.const(np.array([1], np.int32)), T=I32,
             Index=Dt(I32), shrink_axis_mask=1)
    shape = b.op("Pack", n, b.const(np.int32(2)), b.const(np.int32(2)), T=I32, N=3, axis=0)
    b.op("Reshape", x, shape, Tshape=Dt(I32))
    b = new("GeluErf")
    x = b.ph(F, (2, 8))
    erf = b.op("Erf", b.op("RealDiv", x, b.const(np.float32(1.4142135))))
    one = b.op("AddV2", erf, b.const(np.float32(1.0)))
    b.op("Mul", b.op("Mul", x, b.const(np.float32(0.5))), one)
    b = new("GeluTanh")
    x = b.ph(F, (2, 8))
    cube = b.op("Mul", b.const(np.float32(0.044715)), b.op("Pow", x, b.const(np.float32(3)),
                                                            name="gelu/Pow"), name="gelu/mul")
    inner = b.op("AddV2", x, cube, name="gelu/add")
    th = b.op("Tanh", b.op("Mul", b.const(np.float32(0.7978846)), inner, name="gelu/mul_1"),
              name="gelu/Tanh")
    one = b.op("AddV2", b.const(np.float32(1.0)), th, name="gelu/add_1")
    half = b.op("Mul", b.const(np.float32(0.5)), x, name="gelu/mul_2")
    b.op("Mul", half, one, name="gelu/mul_3")
    b = new("Swish")
    x = b.ph(F, (2, 8))
    b.op("Mul", x, b.op("Sigmoid", x))
    b = new("HardSwish")
    x = b.ph(F, (2, 8))
    r6 = b.op("Relu6", b.op("AddV2", x, b.const(np.float32(3.0))))
    b.op("Mul", x, b.op("Mul", r6, b.const(np.float32(1.0 / 6.0))))
    b = new("LayerNorm")
    x = b.ph(F, (2, 3, 8))
    s = "layer_normalization/moments"
    axes = b.const(np.array([-1], np.int32), name=f"{s}/reduction_indices")
    mean = b.op("Mean", x, axes, name=f"{s}/mean", keep_dims=True, Tidx=Dt(I32))
    stop = b.op("StopGradient", mean, name=f"{s}/StopGradient")
    sq = b.op("SquaredDifference", x, stop, name=f"{s}/SquaredDifference")
    var = b.op("Mean", sq, axes, name=f"{s}/variance", keep_dims=True, Tidx=Dt(I32))
    s = "layer_normalization/batchnorm"
    eps = b.op("AddV2", var, b.const(np.float32(1e-3), name=f"{s}/add/y"), name=f"{s}/add")
    rs = b.op("Rsqrt", eps, name=f"{s}/Rsqrt")
    mul = b.op("Mul", rs, b.const(_rand(8) + 1, name=f"{s}/gamma"), name=f"{s}/mul")
    xm = b.op("Mul", x, mul, name=f"{s}/mul_1")
    mm = b.op("Mul", mean, mul, name=f"{s}/mul_2")
    sub = b.op("Sub", b.const(_rand(8), name=f"{s}/beta"), mm, name=f"{s}/sub")
    b.op("AddV2", xm, sub, name=f"{s}/add_1")

    # -- functions and control flow -----------------------------------------------------------
    def neg_body(builder, nodes):
        builder.op("Neg", "arg", name="n", nodes=nodes)
        return {"out": "n:y:0"}

    def abs_body(builder, nodes):
        builder.op("Abs", "arg", name="a", nodes=nodes)
        return {"out": "a:y:0"}

    for op in ("PartitionedCall", "StatefulPartitionedCall"):
        b = new(op)
        b.function("neg_fn", [("arg", F)], [("out", F)], neg_body)
        call = b.node(op, [b.ph(F, (2, 3))], Tin=[Dt(F)], Tout=[Dt(F)], f=Fn("neg_fn"))
        b.op("Relu", call)
    for op in ("If", "StatelessIf"):
        b = new(op)
        b.function("then_fn", [("arg", F)], [("out", F)], neg_body)
        b.function("else_fn", [("arg", F)], [("out", F)], abs_body)
        b.node(op, [b.ph(BOOL, ()), b.ph(F, (2, 3))], Tcond=Dt(BOOL), Tin=[Dt(F)], Tout=[Dt(F)],
               then_branch=Fn("then_fn"), else_branch=Fn("else_fn"), output_shapes=[Shp((2, 3))])

    def cond_body(builder, nodes):
        builder.op("Less", "i", builder.node("Const", (), "limit", nodes, dtype=Dt(I32),
                                              value=np.array(3, np.int32)), T=I32, name="less",
                   nodes=nodes)
        return {"ok": "less:z:0"}

    def loop_body(builder, nodes):
        one = builder.node("Const", (), "one", nodes, dtype=Dt(I32), value=np.array(1, np.int32))
        builder.op("AddV2", "i", f"{one}:output:0", T=I32, name="next", nodes=nodes)
        builder.op("Mul", "x", "x", name="sq", nodes=nodes)
        return {"i_out": "next:z:0", "x_out": "sq:z:0"}

    for op in ("While", "StatelessWhile"):
        b = new(op)
        b.function("cond_fn", [("i", I32), ("x", F)], [("ok", BOOL)], cond_body)
        b.function("body_fn", [("i", I32), ("x", F)], [("i_out", I32), ("x_out", F)], loop_body)
        b.node(op, [b.const(np.int32(0)), b.ph(F, (2, 3))], T=[Dt(I32), Dt(F)], cond=Fn("cond_fn"),
               body=Fn("body_fn"), output_shapes=[Shp(()), Shp((2, 3))], parallel_iterations=10)
    return [(b.name, b.serialize()) for b in seeds]
