"""What a fallback segment may run: the trust model for `ai.tf2ir.tf:TFSubgraph` nodes.

A TFSubgraph node holds a GraphDef that TensorFlow runs (the fallback delegate, `--fallback
tf`). A model file may come from anyone, and TensorFlow runs whatever op a GraphDef names:
`WriteFile` writes a host file, `ReadFile` returns one, `PyFunc` calls Python, `_Send` talks
to other processes. So a segment may hold only op types that compute: the ones listed here
(`ALLOWED`). The list is TensorFlow 2.21's public ops (`tf.raw_ops`) whose OpDef is stateless,
has no reference-typed argument and no function attribute, less those that touch files,
processes, devices, the network, Python, shared state, logs or datasets (`DENIED` says why
for the common ones); plus a few stateful ops that only compute (random numbers, asserts)
and the functional control flow ops, whose bodies are checked like the rest. An op type
not listed is refused, so a newer TensorFlow's ops stay out until someone adds them here
(tests/reliability/test_trust_runtime.py checks the list against TensorFlow's registry).

`refusals(graph_def)` checks every node of a GraphDef message (duck-typed: the protobuf
classes TensorFlow or tensorboard ship, no import here), every node of every function in its
library, and every function an attribute names (If/While bodies, PartitionedCall's `f`): it
runs before TensorFlow sees the GraphDef, when `--fallback tf` cuts a segment
(parser/fallback.py) and when the runtime entry builds a session (tools/runtime.py).
`LOADER_ALLOWED` (ALLOWED plus `LOADER_EXTRA`, the variable, table and loop state a SavedModel
keeps) is what TensorFlow's SavedModel loader may run (parser/loader_trust.py).
"""

from __future__ import annotations

import re
from typing import Iterable, List, NamedTuple

ALLOWED_TEXT = """
Abs AccumulateNV2 Acos Acosh Add AddN AddV2 AdjustContrast AdjustContrastv2 AdjustHue
AdjustSaturation All Angle Any ApproxTopK ApproximateEqual ArgMax ArgMin AsString Asin Asinh
Atan Atan2 Atanh AudioSpectrogram AvgPool AvgPool3D AvgPool3DGrad AvgPoolGrad
BandedTriangularSolve BatchCholesky BatchCholeskyGrad BatchFFT BatchFFT2D BatchFFT3D
BatchIFFT BatchIFFT2D BatchIFFT3D BatchMatMul BatchMatMulV2 BatchMatMulV3
BatchMatrixBandPart BatchMatrixDeterminant BatchMatrixDiag BatchMatrixDiagPart
BatchMatrixInverse BatchMatrixSetDiag BatchMatrixSolve BatchMatrixSolveLs
BatchMatrixTriangularSolve BatchNormWithGlobalNormalization
BatchNormWithGlobalNormalizationGrad BatchSelfAdjointEig BatchSelfAdjointEigV2 BatchSvd
BatchToSpace BatchToSpaceND BesselI0 BesselI0e BesselI1 BesselI1e BesselJ0 BesselJ1 BesselK0
BesselK0e BesselK1 BesselK1e BesselY0 BesselY1 Betainc BiasAdd BiasAddGrad BiasAddV1
Bincount Bitcast BitwiseAnd BitwiseOr BitwiseXor BlockLSTM BlockLSTMGrad BlockLSTMGradV2
BlockLSTMV2 BroadcastArgs BroadcastGradientArgs BroadcastTo Bucketize
CSRSparseMatrixComponents CSRSparseMatrixToDense CSRSparseMatrixToSparseTensor
CTCBeamSearchDecoder CTCGreedyDecoder CTCLoss CTCLossV2 Cast Ceil Cholesky CholeskyGrad
ClipByValue CombinedNonMaxSuppression Complex ComplexAbs
CompositeTensorVariantFromComponents CompositeTensorVariantToComponents
ComputeAccidentalHits Concat ConcatOffset ConcatV2 Conj ConjugateTranspose Const
ControlTrigger Conv Conv2D Conv2DBackpropFilter Conv2DBackpropFilterV2 Conv2DBackpropInput
Conv2DBackpropInputV2 Conv3D Conv3DBackpropFilter Conv3DBackpropFilterV2 Conv3DBackpropInput
Conv3DBackpropInputV2 Cos Cosh CropAndResize CropAndResizeGradBoxes CropAndResizeGradImage
Cross Cumprod Cumsum CumulativeLogsumexp DataFormatDimMap DataFormatVecPermute Dawsn
DecodeAndCropJpeg DecodeBase64 DecodeBmp DecodeCSV DecodeCompressed DecodeGif DecodeImage
DecodeJSONExample DecodeJpeg DecodeJxl DecodePaddedRaw DecodePng DecodeRaw DecodeWav
DecodeWebP DenseBincount DenseCountSparseOutput DenseToCSRSparseMatrix
DenseToDenseSetOperation DenseToSparseSetOperation DepthToSpace DepthwiseConv2dNative
DepthwiseConv2dNativeBackpropFilter DepthwiseConv2dNativeBackpropInput Dequantize
DeserializeManySparse DeserializeSparse Diag DiagPart Digamma Dilation2D
Dilation2DBackpropFilter Dilation2DBackpropInput Div DivNoNan DrawBoundingBoxes
DrawBoundingBoxesV2 DynamicPartition DynamicStitch EditDistance Eig Einsum Elu EluGrad
EmptyTensorList EmptyTensorMap EncodeBase64 EncodeJpeg EncodePng EncodeWav EnsureShape Enter
Equal Erf Erfc Erfinv EuclideanNorm Exit Exp ExpandDims Expint Expm1 ExtractGlimpse
ExtractGlimpseV2 ExtractImagePatches ExtractJpegShape ExtractVolumePatches FFT FFT2D FFT3D
FFTND FakeParam FakeQuantWithMinMaxArgs FakeQuantWithMinMaxArgsGradient
FakeQuantWithMinMaxVars FakeQuantWithMinMaxVarsGradient FakeQuantWithMinMaxVarsPerChannel
FakeQuantWithMinMaxVarsPerChannelGradient Fill Fingerprint Floor FloorDiv FloorMod
FractionalAvgPool FractionalAvgPoolGrad FractionalMaxPool FractionalMaxPoolGrad FresnelCos
FresnelSin FusedBatchNorm FusedBatchNormGrad FusedBatchNormGradV2 FusedBatchNormGradV3
FusedBatchNormV2 FusedBatchNormV3 FusedPadConv2D FusedResizeAndPadConv2D GRUBlockCell
GRUBlockCellGrad Gather GatherNd GatherV2 GenerateBoundingBoxProposals Greater GreaterEqual
HSVToRGB HistogramFixedWidth IFFT IFFT2D IFFT3D IFFTND IRFFT IRFFT2D IRFFT3D IRFFTND
Identity IdentityN Igamma IgammaGradA Igammac Imag ImageProjectiveTransformV2
ImageProjectiveTransformV3 InTopK InTopKV2 InplaceAdd InplaceSub InplaceUpdate Inv InvGrad
Invert InvertPermutation IsFinite IsInf IsNan IsotonicRegression KMC2ChainInitialization
KmeansPlusPlusInitialization L2Loss LRN LRNGrad LSTMBlockCell LSTMBlockCellGrad LeakyRelu
LeakyReluGrad LeftShift Less LessEqual Lgamma LinSpace ListDiff Log Log1p
LogMatrixDeterminant LogSoftmax LogicalAnd LogicalNot LogicalOr LoopCond LowerBound Lu
MatMul MatrixBandPart MatrixDeterminant MatrixDiag MatrixDiagPart MatrixDiagPartV2
MatrixDiagPartV3 MatrixDiagV2 MatrixDiagV3 MatrixExponential MatrixInverse MatrixLogarithm
MatrixSetDiag MatrixSetDiagV2 MatrixSetDiagV3 MatrixSolve MatrixSolveLs MatrixSquareRoot
MatrixTriangularSolve Max MaxPool MaxPool3D MaxPool3DGrad MaxPool3DGradGrad MaxPoolGrad
MaxPoolGradGrad MaxPoolGradGradV2 MaxPoolGradGradWithArgmax MaxPoolGradV2
MaxPoolGradWithArgmax MaxPoolV2 MaxPoolWithArgmax Maximum Mean Merge Mfcc Min Minimum
MirrorPad MirrorPadGrad Mod Mul MulNoNan Ndtri NearestNeighbors Neg NextAfter NextIteration
NoOp NonMaxSuppression NonMaxSuppressionV2 NonMaxSuppressionV3 NonMaxSuppressionV4
NonMaxSuppressionV5 NonMaxSuppressionWithOverlaps NotEqual NthElement OneHot OnesLike Pack
Pad PadV2 ParallelConcat ParallelDynamicStitch ParseExample ParseExampleV2
ParseSequenceExample ParseSequenceExampleV2 ParseSingleExample ParseSingleSequenceExample
ParseTensor Placeholder PlaceholderV2 PlaceholderWithDefault Polygamma PopulationCount Pow
PreventGradient Prod Qr QuantizeAndDequantize QuantizeAndDequantizeV2
QuantizeAndDequantizeV3 QuantizeAndDequantizeV4 QuantizeAndDequantizeV4Grad
QuantizeDownAndShrinkRange QuantizeV2 QuantizedAdd QuantizedAvgPool
QuantizedBatchNormWithGlobalNormalization QuantizedBiasAdd QuantizedConcat QuantizedConv2D
QuantizedConv2DAndRelu QuantizedConv2DAndReluAndRequantize QuantizedConv2DAndRequantize
QuantizedConv2DPerChannel QuantizedConv2DWithBias QuantizedConv2DWithBiasAndRelu
QuantizedConv2DWithBiasAndReluAndRequantize QuantizedConv2DWithBiasAndRequantize
QuantizedConv2DWithBiasSignedSumAndReluAndRequantize QuantizedConv2DWithBiasSumAndRelu
QuantizedConv2DWithBiasSumAndReluAndRequantize QuantizedDepthwiseConv2D
QuantizedDepthwiseConv2DWithBias QuantizedDepthwiseConv2DWithBiasAndRelu
QuantizedDepthwiseConv2DWithBiasAndReluAndRequantize QuantizedInstanceNorm QuantizedMatMul
QuantizedMatMulWithBias QuantizedMatMulWithBiasAndDequantize QuantizedMatMulWithBiasAndRelu
QuantizedMatMulWithBiasAndReluAndRequantize QuantizedMatMulWithBiasAndRequantize
QuantizedMaxPool QuantizedMul QuantizedRelu QuantizedRelu6 QuantizedReluX QuantizedReshape
QuantizedResizeBilinear RFFT RFFT2D RFFT3D RFFTND RGBToHSV RaggedBincount
RaggedCountSparseOutput RaggedCross RaggedFillEmptyRows RaggedFillEmptyRowsGrad RaggedGather
RaggedRange RaggedTensorFromVariant RaggedTensorToSparse RaggedTensorToTensor
RaggedTensorToVariant RaggedTensorToVariantGradient RandomGammaGrad RandomIndexShuffle Range
Rank Real RealDiv Reciprocal ReciprocalGrad ReduceJoin RegexFullMatch RegexReplace Relu
Relu6 Relu6Grad ReluGrad RequantizationRange RequantizationRangePerChannel Requantize
RequantizePerChannel Reshape ResizeArea ResizeBicubic ResizeBicubicGrad ResizeBilinear
ResizeBilinearGrad ResizeNearestNeighbor ResizeNearestNeighborGrad Reverse ReverseSequence
ReverseV2 RightShift Rint Roll Round Rsqrt RsqrtGrad ScaleAndTranslate ScaleAndTranslateGrad
ScatterNd ScatterNdNonAliasingAdd SegmentMax SegmentMaxV2 SegmentMean SegmentMin
SegmentMinV2 SegmentProd SegmentProdV2 SegmentSum SegmentSumV2 Select SelectV2
SelfAdjointEig SelfAdjointEigV2 Selu SeluGrad SerializeManySparse SerializeSparse
SerializeTensor SetSize Shape ShapeN Sigmoid SigmoidGrad Sign Sin Sinh Size Slice
SobolSample Softmax SoftmaxCrossEntropyWithLogits Softplus SoftplusGrad Softsign
SoftsignGrad SpaceToBatch SpaceToBatchND SpaceToDepth SparseAdd SparseAddGrad SparseBincount
SparseConcat SparseCountSparseOutput SparseCross SparseCrossHashed SparseCrossV2
SparseDenseCwiseAdd SparseDenseCwiseDiv SparseDenseCwiseMul SparseFillEmptyRows
SparseFillEmptyRowsGrad SparseMatMul SparseMatrixAdd SparseMatrixMatMul SparseMatrixMul
SparseMatrixNNZ SparseMatrixOrderingAMD SparseMatrixSoftmax SparseMatrixSoftmaxGrad
SparseMatrixSparseCholesky SparseMatrixSparseMatMul SparseMatrixTranspose SparseMatrixZeros
SparseReduceMax SparseReduceMaxSparse SparseReduceSum SparseReduceSumSparse SparseReorder
SparseReshape SparseSegmentMean SparseSegmentMeanGrad SparseSegmentMeanGradV2
SparseSegmentMeanWithNumSegments SparseSegmentSqrtN SparseSegmentSqrtNGrad
SparseSegmentSqrtNGradV2 SparseSegmentSqrtNWithNumSegments SparseSegmentSum
SparseSegmentSumGrad SparseSegmentSumGradV2 SparseSegmentSumWithNumSegments SparseSlice
SparseSliceGrad SparseSoftmax SparseSoftmaxCrossEntropyWithLogits SparseSparseMaximum
SparseSparseMinimum SparseSplit SparseTensorDenseAdd SparseTensorDenseMatMul
SparseTensorToCSRSparseMatrix SparseToDense SparseToSparseSetOperation Spence Split SplitV
Sqrt SqrtGrad Square SquaredDifference Squeeze StatelessMultinomial
StatelessParameterizedTruncatedNormal StatelessRandomBinomial StatelessRandomGammaV2
StatelessRandomGammaV3 StatelessRandomGetKeyCounter StatelessRandomGetKeyCounterAlg
StatelessRandomNormal StatelessRandomNormalV2 StatelessRandomPoisson StatelessRandomUniform
StatelessRandomUniformFullInt StatelessRandomUniformFullIntV2 StatelessRandomUniformInt
StatelessRandomUniformIntV2 StatelessRandomUniformV2 StatelessSampleDistortedBoundingBox
StatelessShuffle StatelessTruncatedNormal StatelessTruncatedNormalV2 StaticRegexFullMatch
StaticRegexReplace StopGradient StridedSlice StridedSliceGrad StringFormat StringJoin
StringLength StringLower StringNGrams StringSplit StringSplitV2 StringStrip
StringToHashBucket StringToHashBucketFast StringToHashBucketStrong StringToNumber
StringUpper Sub Substr Sum Svd Switch Tan Tanh TanhGrad TensorListConcat
TensorListConcatLists TensorListConcatV2 TensorListElementShape TensorListFromTensor
TensorListGather TensorListGetItem TensorListLength TensorListPopBack TensorListPushBack
TensorListPushBackBatch TensorListReserve TensorListResize TensorListScatter
TensorListScatterIntoExistingList TensorListScatterV2 TensorListSetItem TensorListSplit
TensorMapErase TensorMapHasKey TensorMapInsert TensorMapSize TensorScatterAdd
TensorScatterMax TensorScatterMin TensorScatterSub TensorScatterUpdate
TensorStridedSliceUpdate Tile TileGrad ToBool TopK TopKV2 Transpose TridiagonalMatMul
TridiagonalSolve TruncateDiv TruncateMod UncompressElement UnicodeDecode
UnicodeDecodeWithOffsets UnicodeEncode UnicodeScript UnicodeTranscode UniformDequantize
UniformQuantize UniformQuantizedAdd UniformQuantizedClipByValue UniformQuantizedConvolution
UniformQuantizedConvolutionHybrid UniformQuantizedDot UniformQuantizedDotHybrid
UniformRequantize Unique UniqueV2 UniqueWithCounts UniqueWithCountsV2 Unpack UnravelIndex
UnsortedSegmentJoin UnsortedSegmentMax UnsortedSegmentMin UnsortedSegmentProd
UnsortedSegmentSum UpperBound Where Xdivy Xlog1py Xlogy ZerosLike Zeta
"""
# Stateful in TensorFlow's OpDef, yet they only compute (or check) values.
STATEFUL_ALLOWED = frozenset(
    "Assert CheckNumerics CheckNumericsV2 DeepCopy Empty GuaranteeConst Multinomial "
    "ParameterizedTruncatedNormal RandomCrop RandomGamma RandomPoisson RandomPoissonV2 "
    "RandomShuffle RandomStandardNormal RandomUniform RandomUniformInt "
    "SampleDistortedBoundingBox SampleDistortedBoundingBoxV2 StatelessRandomGetAlg "
    "TruncatedNormal".split())
# Functional control flow: the functions their attributes name must be in the GraphDef's
# library, where they are checked like the top-level nodes.
CONTROL_FLOW = frozenset("Case For If PartitionedCall StatefulPartitionedCall StatelessCase "
                         "StatelessIf StatelessWhile While".split())
# Stateless ops whose names the patterns of DENIED match, reviewed: they only compute.
REVIEWED = frozenset("EncodeJpegVariableQuality TensorListStack TensorMapLookup "
                     "TensorMapStackKeys".split())
# tensorflow-text's tokenizer ops (issue 25), reviewed: they compute from their inputs and
# attributes (SentencepieceOp makes its model from the `model` attribute); none reads a file.
TEXT = frozenset("""
CaseFoldUTF8 NormalizeUTF8 NormalizeUTF8WithOffsetsMap FastBertNormalize RegexSplitWithOffsets
WordpieceTokenizeWithOffsets FastWordpieceTokenizeWithOffsets SentencepieceOp
SentencepieceTokenizeOp SentencepieceTokenizeWithOffsetsOp SentencepieceDetokenizeOp
SentencepieceIdToStringOp SentencepieceStringToIdOp SentencepieceVocabSizeOp
TFText>WhitespaceTokenizeWithOffsetsV2 WhitespaceTokenizeWithOffsets
UnicodeScriptTokenizeWithOffsets TFText>NgramsStringJoin TFText>RoundRobinTrim
TFText>RoundRobinGenerateMasks SplitMergeTokenizeWithOffsets
""".split())
ALLOWED = frozenset(ALLOWED_TEXT.split()) | REVIEWED | STATEFUL_ALLOWED | CONTROL_FLOW | TEXT

# What TensorFlow's SavedModel loader may run besides ALLOWED (parser/loader_trust.py checks a
# SavedModel's MetaGraph with it before TensorFlow loads the directory): the state a SavedModel
# keeps in the process for its variables, lookup tables, RNN loops and random generators. It
# writes no file: a checkpoint restore op is allowed only where its prefix is the loader's
# (the saver's filename tensor), a file-initialised table only where its file name comes
# from the SavedModel's assets (or a constant inside the directory), and the saver's own
# SaveV2/MergeV2Checkpoints only where the loader never runs them (reachable from the saver's
# save tensor alone; they are not listed here).
LOADER_EXTRA = frozenset("""
Assign AssignAdd AssignAddVariableOp AssignSub AssignSubVariableOp AssignVariableOp
DestroyResourceOp DisableCopyOnRead IsVariableInitialized ReadVariableOp ResourceGather
VarHandleOp VarIsInitializedOp Variable VariableShape VariableV2
HashTable HashTableV2 InitializeTable InitializeTableFromTextFile InitializeTableFromTextFileV2
InitializeTableV2 LookupTableExport LookupTableExportV2 LookupTableFind LookupTableFindV2
LookupTableImport LookupTableImportV2 LookupTableInsert LookupTableInsertV2
LookupTableRemoveV2 LookupTableSize LookupTableSizeV2 MutableDenseHashTable
MutableDenseHashTableV2 MutableHashTable MutableHashTableOfTensors
MutableHashTableOfTensorsV2 MutableHashTableV2
Restore RestoreSlice RestoreV2
TensorArrayCloseV3 TensorArrayConcatV3 TensorArrayGatherV3 TensorArrayGradV3 TensorArrayReadV3
TensorArrayScatterV3 TensorArraySizeV3 TensorArraySplitV3 TensorArrayV3 TensorArrayWriteV3
RngReadAndSkip RngSkip StatefulStandardNormalV2 StatefulTruncatedNormal StatefulUniform
StatefulUniformFullInt StatefulUniformInt
""".split())
LOADER_ALLOWED = ALLOWED | LOADER_EXTRA

# Why the common refused op types are refused (the first pattern that matches names it).
DENIED = (
    (r"File|Reader|^Save|^Restore|Checkpoint|ImmutableConst|Proto|Vocab|LoadAndRemap|"
     r"Unigram|Skipgram|SummaryWriter|WriteSummary|WriteScalar|WriteHistogram|WriteImage|"
     r"WriteAudio|WriteGraph|WriteRaw|Dataset|Iterator|RecordInput",
     "reads or writes files"),
    (r"PyFunc|NumpyFunction", "runs Python code"),
    (r"Send|Recv|Collective|Nccl|Remote|Rpc|Host|Infeed|Outfeed|TPU|Tpu|Xla|Heartbeat|"
     r"AllToAll|CrossReplica|DTensor|Mesh",
     "talks to other devices, processes or the network"),
    (r"Variable|Resource|Assign|Table|Lookup|Queue|Stack|TensorArray|Barrier|Mutex|"
     r"Accumulator|Stage|Map(Clear|Size|Peek|Unstage|IncompleteSize)|^Apply|^SparseApply|"
     r"^Scatter(Add|Sub|Mul|Div|Min|Max|Update|NdAdd|NdSub|NdUpdate|NdMin|NdMax)$|"
     r"SessionHandle|SessionTensor|SparseToTensorsMap|SparseFromTensorsMap|CountUpTo",
     "keeps or changes state (variables, tables, queues, resources)"),
    (r"Print|Debug|Summary|Timestamp", "writes logs or debugging output"),
    (r"^Abort$", "ends the process"),
)
_DENIED = [(re.compile(pattern), reason) for pattern, reason in DENIED]
NOT_LISTED = "is not an op type a fallback segment may run"


class Refusal(NamedTuple):
    """One node a segment may not run: where (node, or function/node), its op, why."""

    where: str
    op_type: str
    reason: str

    def __str__(self) -> str:
        return f"{self.op_type} (node '{self.where}': {self.reason})"


def reason(op_type: str, not_listed: str = NOT_LISTED) -> str:
    """Why `op_type` may not run in a segment (any op type not in ALLOWED)."""
    for pattern, why in _DENIED:
        if pattern.search(op_type):
            return why
    return not_listed


def refusals(graph_def) -> List[Refusal]:
    """Every node of `graph_def` (and of its function library) a segment may not run."""
    functions = {f.signature.name: f for f in graph_def.library.function}
    found: List[Refusal] = []
    found += check_nodes(graph_def.node, "", functions)
    for name, function in functions.items():
        found += check_nodes(function.node_def, f"{name}/", functions)
    return found


def check_nodes(nodes: Iterable, prefix: str, functions, allowed=ALLOWED,
                not_listed: str = NOT_LISTED) -> List[Refusal]:
    """The nodes (named `prefix` + name) whose op type is not in `allowed` (nor a function
    of `functions`), or that call a function other than as control flow, or one not defined."""
    found = []
    for node in nodes:
        where = prefix + node.name
        if node.op not in allowed and node.op not in functions:
            found.append(Refusal(where, node.op, reason(node.op, not_listed)))
            continue
        for key in sorted(node.attr):
            value = node.attr[key]
            called = [value.func.name] if value.HasField("func") else []
            if value.HasField("list"):
                called += [f.name for f in value.list.func]
            for name in called:
                if node.op not in CONTROL_FLOW:
                    found.append(Refusal(where, node.op, f"calls function '{name}' (attribute "
                                         f"'{key}'), which only control flow ops may"))
                elif name not in functions:
                    found.append(Refusal(where, node.op, f"calls function '{name}' (attribute "
                                         f"'{key}'), which the GraphDef does not define"))
    return found


def refusal_text(found: List[Refusal], limit: int = 3) -> str:
    """One line for a list of refusals: the first `limit` of them and how many more."""
    unique = list(dict.fromkeys(found))
    text = ", ".join(str(r) for r in unique[:limit])
    if len(unique) > limit:
        text += f" and {len(unique) - limit} more"
    return text
