"""MatMul rewrites on the lowered ONNX graph.

- Sibling MatMuls (attention's query, key and value projections) reading one input with
  constant 2-D weights become one MatMul of the concatenated weights and a Split of its
  last axis: one larger product instead of several.
- A two-operand Einsum that is a batched matrix product (attention's scores and context:
  'BTNH,BSNH->BNTS', 'BNTS,BSNH->BTNH') becomes Transposes around a MatMul, which
  onnxruntime runs faster than its Einsum kernel and its transformer optimizer recognises.
- A bias Add after a Reshape that splits the last axis into heads (Keras' attention adds
  its (heads, size) bias after the projection's reshape) moves before the Reshape, as one
  vector: MatMul -> Add -> Reshape, the form sibling merging and onnxruntime's attention
  fusion look for; and attention scores scaled by a power of two before the Softmax
  (Keras: times 1/8) are divided by its inverse instead (exact), the form that fusion
  matches.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode


def merge_sibling_matmuls(g: OnnxGraph) -> int:
    """Merge MatMuls that share their first input and have constant 2-D weights of one
    dtype; return how many MatMuls (and bias Adds) went. The merged MatMul, its bias Add
    and the Split land right after the shared input's producer, the Split writing the names
    the MatMuls (or their Adds) wrote, so every reader keeps its input."""
    groups: Dict[tuple, List[OnnxNode]] = {}
    for node in g.of_type("MatMul"):
        if len(node.input) == 2 and node.input[0] != node.input[1]:
            w = g.const(node.input[1])
            if w is not None and w.ndim == 2 and g.const(node.input[0]) is None:
                groups.setdefault((node.input[0], w.dtype.str, w.shape[0]), []).append(node)
    removed = 0
    for (x, _, _), nodes in groups.items():
        if len(nodes) < 2:
            continue
        weights: List[np.ndarray] = []
        for n in nodes:
            w = g.const(n.input[1])
            assert w is not None    # grouped above by their constant weight, unchanged since
            weights.append(w)
        biases = [_bias_after(g, n, w) for n, w in zip(nodes, weights)]
        with_bias = all(b is not None for b in biases)
        rank = g.rank(nodes[0].output[0])
        outputs = [add.output[0] for add, _ in biases] if with_bias \
            else [n.output[0] for n in nodes]
        for add, _ in (biases if with_bias else ()):
            g.remove(add, keep_uses=True)       # the Split writes their names
        for n in nodes:
            g.remove(n, keep_uses=not with_bias)
        merged = g.fresh(f"{nodes[0].output[0]}/merged")
        sizes = g.add_initializer(np.array([w.shape[1] for w in weights], np.int64),
                                  "split_sizes")
        weight = g.add_initializer(np.concatenate(weights, axis=1), "weight_merged")
        chain = [g.add_node("MatMul", [x, weight], [merged])]
        if with_bias:
            biased = g.fresh(f"{nodes[0].output[0]}/biased")
            bias = g.add_initializer(np.concatenate([b for _, b in biases]), "bias_merged")
            chain.append(g.add_node("Add", [merged, bias], [biased]))
        g.add_node("Split", [chain[-1].output[0], sizes], outputs, axis=-1)
        if rank is not None:
            g.ranks.update({n.output[0]: rank for n in chain})
        removed += (len(nodes) - 1) * (2 if with_bias else 1)
    return removed


def _bias_after(g: OnnxGraph, matmul: OnnxNode, w: np.ndarray):
    """(the Add, its bias as a vector) when `matmul`'s output is read by one Add alone
    that adds a constant per output column; else None."""
    y = matmul.output[0]
    add = g.only_user(y)
    if add is None or add.op_type != "Add" or not add.standard or len(add.input) != 2:
        return None
    other = add.input[1] if add.input[0] == y else add.input[0]
    c = g.const(other)
    if c is None or other == y or c.dtype != w.dtype or c.ndim > 1 or c.size != w.shape[1]:
        return None
    return add, c.reshape(-1)


def _batched_matmul(equation: str) -> Optional[Tuple[List[int], List[int], List[int]]]:
    """For 'ab..,cd..->..' that is a batched matrix product with one free index per operand
    and one contracted: the permutations of the two operands into [batch..., M, K] and
    [batch..., K, N], and of the product [batch..., M, N] into the output; else None."""
    if "->" not in equation or "..." in equation:
        return None
    ins, out = equation.replace(" ", "").split("->")
    parts = ins.split(",")
    if len(parts) != 2:
        return None
    a, b = parts
    if any(len(set(t)) != len(t) for t in (a, b, out)):
        return None          # a repeated index: a trace or a diagonal
    batch = [c for c in out if c in a and c in b]
    left = [c for c in out if c in a and c not in b]
    right = [c for c in out if c in b and c not in a]
    contracted = [c for c in a if c in b and c not in out]
    if len(left) != 1 or len(right) != 1 or len(contracted) != 1 \
            or set(a) != set(batch + left + contracted) or set(b) != set(batch + right + contracted):
        return None
    a_order = batch + left + contracted
    b_order = batch + contracted + right
    product = batch + left + right
    return ([a.index(c) for c in a_order], [b.index(c) for c in b_order],
            [product.index(c) for c in out])


def einsums_to_matmuls(g: OnnxGraph) -> int:
    """Rewrite batched-matmul Einsums as Transpose/MatMul/Transpose; return how many. The
    operands' Transposes and the MatMul go before the Einsum, which becomes the MatMul (or
    the output's Transpose) in place, writing its name."""
    count = 0
    for node in g.of_type("Einsum"):
        if len(node.input) != 2 or len(node.output) != 1:
            continue
        equation = node.attr("equation")
        equation = equation.decode() if isinstance(equation, bytes) else equation
        plan = _batched_matmul(equation or "")
        if plan is None:
            continue
        a_perm, b_perm, out_perm = plan
        operands = []
        for name, perm in zip(node.input, (a_perm, b_perm)):
            if perm == sorted(perm):
                operands.append(name)
                continue
            moved = g.add_node("Transpose", [name], [g.fresh(f"{name}/transposed")],
                               before=node, perm=perm).output[0]
            g.ranks[moved] = len(perm)
            operands.append(moved)
        y = node.output[0]
        if out_perm == sorted(out_perm):
            g.set_op(node, "MatMul", operands, attrs={})
        else:
            product = g.add_node("MatMul", operands, [g.fresh(f"{y}/matmul")],
                                 before=node).output[0]
            g.ranks[product] = len(out_perm)
            g.set_op(node, "Transpose", [product], attrs={"perm": out_perm})
        count += 1
    return count


def attention_form(g: OnnxGraph) -> int:
    """Split-axis biases hoisted before their Reshape and power-of-two score scales as
    Divs (the module's docstring); return how many rewrites."""
    return hoist_split_biases(g) + scales_as_divs(g)


def scales_as_divs(g: OnnxGraph) -> int:
    """Mul(MatMul(..), c) read only by a Softmax, c a scalar power of two, as Div by 1 / c
    (exact: both are exponent shifts); the Mul becomes the Div in place."""
    count = 0
    for mul in g.of_type("Mul"):
        if len(mul.input) != 2:
            continue
        readers = g.uses(mul.output[0])
        if len(readers) != 1 or readers[0][0].op_type != "Softmax":
            continue
        for pos in (1, 0):
            c, x = g.const(mul.input[pos]), mul.input[1 - pos]
            source = g.producer(x)
            if c is None or c.size != 1 or c.dtype.kind != "f" or source is None \
                    or source.op_type != "MatMul":
                continue
            mantissa, _ = np.frexp(c.reshape(-1)[0])
            if mantissa != 0.5:     # 2**k: its inverse is exact
                continue
            inverse = g.add_initializer((np.ones((), c.dtype) / c).astype(c.dtype), "scale_inverse")
            g.set_op(mul, "Div", [x, inverse])
            count += 1
            break
    return count


def hoist_split_biases(g: OnnxGraph) -> int:
    """Rewrite Add(Reshape(x, target), b), where the Reshape splits x's last axis into b's
    (trailing) shape, as Reshape(Add(x, b flattened), target); return how many. Exact: x's
    last axis is target's last dims in row-major order whatever the leading dims do. The new
    Add goes before the Reshape; the Reshape (its name and allowzero) is made again after it,
    writing the old Add's output."""
    count = 0
    for add in g.of_type("Add"):
        if len(add.input) != 2:
            continue
        for pos in (1, 0):
            y, bias = add.input[1 - pos], g.const(add.input[pos])
            reshape = g.producer(y)
            if bias is None or reshape is None or reshape.op_type != "Reshape" \
                    or not reshape.standard or g.only_user(y) is not add \
                    or len(reshape.input) != 2:
                continue
            x, target = reshape.input[0], g.const(reshape.input[1])
            split = _split_bias(bias, target, _last_dim(g, x))
            if split is None:
                continue
            vector = g.add_initializer(split, "bias_vector")
            out = add.output[0]
            moved = g.add_node("Add", [x, vector], [g.fresh(f"{out}/hoisted")],
                               before=reshape).output[0]
            g.remove(add, keep_uses=True)       # the Reshape below writes `out` again
            g.remove(reshape)
            g.add_node("Reshape", [moved, reshape.input[1]], [out], name=reshape.name,
                       domain=reshape.domain, **reshape.attrs)
            rank = g.rank(x)
            if rank is not None:
                g.ranks[moved] = rank
            count += 1
            break
    return count


def _last_dim(g: OnnxGraph, x: str) -> Optional[int]:
    shape = g.shapes.get(x)
    if shape and shape[-1] is not None:
        return int(shape[-1])
    node = g.producer(x)     # a projection: MatMul by a constant matrix
    w = g.const(node.input[1]) if node is not None and node.op_type == "MatMul" \
        and len(node.input) == 2 else None
    return int(w.shape[1]) if w is not None and w.ndim == 2 else None


def _split_bias(bias: np.ndarray, target: Optional[np.ndarray], last: Optional[int]):
    """`bias` as a vector over x's last axis, when the Reshape to `target` splits that axis
    (of size `last`) into bias's shape (leading 1s aside); else None."""
    if target is None or last is None or bias.dtype.kind != "f":
        return None
    dims = list(bias.shape)
    while dims and dims[0] == 1:
        dims.pop(0)
    k = len(dims)
    tail = [int(d) for d in target.reshape(-1)[-k:]] if 0 < k <= target.size else None
    if bias.ndim > target.size or tail != dims or int(np.prod(dims)) != last:
        return None
    return np.ascontiguousarray(bias.reshape(-1))
